package host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/wire"
)

// NoCache as Options.CacheDir turns the description cache off.
const NoCache = "-"

// descCache keeps each plugin's DescribeResponse on disk, so that a host
// starting with a warm cache registers a plugin's tools without launching
// it. An entry is keyed by the binary's absolute path, size, modification
// time, SHA-256 and the protocol version; a script's, also by what it
// depends on (see pluginDeps).
//
// Hashing every binary at every start-up would cost more than the launch
// it saves, so a lookup first compares what stat says: when the path,
// size, modification time, inode, device and change time all match the
// entry's, the entry's hash is trusted. The change time cannot be set
// from user space, and replacing or rewriting a binary (a rebuild, a
// copy, touch -m) changes it, so a rebuilt binary is always hashed. When
// stat differs but the size matches, the binary is hashed: the same
// content (a copy, a restore) keeps its description and the entry is
// refreshed; different content is described again.
//
// A cache file that cannot be read or parsed is ignored, and rewritten
// once the plugin has been described.
//
// An entry also names the tools whose parameters schema resolved (see
// checkedSchemas), so that a host loading the same description again
// need not resolve, for each tool of each plugin, a schema that only the
// model reads: a tool that checks its own arguments is validated by its
// plugin, never against the host's copy of its schema.
type descCache struct {
	dir string // "" when the cache is off
}

// cacheEntry is one cache file.
type cacheEntry struct {
	Path          string `json:"path"`
	Size          int64  `json:"size"`
	ModTime       int64  `json:"mtime_ns"`
	ChangeTime    int64  `json:"ctime_ns"`
	Inode         uint64 `json:"inode"`
	Device        uint64 `json:"device"`
	SHA256        string `json:"sha256"`
	Protocol      int    `json:"protocol"`
	ProtocolMinor int    `json:"protocol_minor"`
	// Deps is the key of what a script's description depends on besides
	// the script (pluginDeps); "" for a binary.
	Deps string `json:"deps,omitempty"`
	// Description is the source's description (description), as JSON.
	Description json.RawMessage `json:"description"`
	// Resolved names the tools whose parameters schema resolved as an
	// object schema, by the schema checker Checker (schemaChecker).
	Resolved []string `json:"resolved,omitempty"`
	Checker  string   `json:"checker,omitempty"`
}

// schemaChecker identifies the host's check of a parameters schema
// (resolveParameters) and the JSON Schema library it uses: what an entry
// written by another says was checked is no guide to what this one
// accepts.
var schemaChecker = sync.OnceValue(func() string {
	id := "resolveParameters/1"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "github.com/google/jsonschema-go" {
				if m.Replace != nil {
					m = m.Replace
				}
				id += " " + m.Path + "@" + m.Version + " " + m.Sum
			}
		}
	}
	return id
})

// checkedSchemas returns the names of desc's tools whose parameters
// schema resolves as an object schema: what the registry checks of each
// when it registers it.
func checkedSchemas(desc *description) []string {
	var names []string
	for _, spec := range desc.Tools {
		if _, err := resolveParameters(spec.Parameters); err == nil {
			names = append(names, spec.Name)
		}
	}
	return names
}

// newDescCache returns the cache in dir: "" means the user's cache
// directory, NoCache none.
func newDescCache(dir string) *descCache {
	switch dir {
	case NoCache:
		return &descCache{}
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return &descCache{}
		}
		dir = filepath.Join(base, "agenthost", "plugins")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &descCache{dir: dir}
}

// binaryStat is what stat says of a binary, for the cache key.
type binaryStat struct {
	path               string
	size, mtime, ctime int64
	inode, device      uint64
}

func statBinary(path string) (binaryStat, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return binaryStat{}, err
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	info, err := os.Stat(abs)
	if err != nil {
		return binaryStat{}, err
	}
	st := binaryStat{path: abs, size: info.Size(), mtime: info.ModTime().UnixNano()}
	st.ctime, st.inode, st.device = statIdentity(info)
	return st, nil
}

// depsSuffix ends the name of a script plugin's list of what it depends
// on, beside it: agenthost-plugin-NAME.deps (see pluginDeps).
const depsSuffix = ".deps"

// maxDepsFiles bounds the files and directories a script's list may
// cover: every lookup stats each of them.
const maxDepsFiles = 10000

// deps is pluginDeps(path); an error also when the cache is off.
func (c *descCache) deps(path string) (string, error) {
	if c == nil || c.dir == "" {
		return "", errors.New("the description cache is off")
	}
	return pluginDeps(path)
}

// pluginDeps returns the key of what the description of the plugin at
// path depends on besides its own file, or why the description may not
// be cached.
//
// A binary's description is taken to depend on the binary alone: the key
// is "". A script (a file starting with "#!") serves whatever its
// interpreter, its imports or a program it runs say, none of which the
// host can see; so a script's description is cached only when a file
// named like it plus ".deps", beside it (see depsList), lists what it
// depends on: one path a line (blank lines and lines starting with "#"
// are skipped), relative to the directory the list is in once symlinks
// are resolved, or absolute; a directory stands for everything under
// it. The key is then a hash of the list and of what stat says of each
// of those files (name, type, size, modification and change time,
// inode, device), or of their absence: an edit, a new file or a removed
// one makes another key. An empty list says that the script depends on
// nothing else. A list covering more than maxDepsFiles is refused.
func pluginDeps(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	script := isScript(f)
	f.Close()
	if !script {
		return "", nil
	}
	real, err := depsList(path)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "deps/1 %s %d\n%s\n", real, len(data), data)
	files := 0
	for line := range strings.Lines(string(data)) {
		dep := strings.TrimSpace(line)
		if dep == "" || strings.HasPrefix(dep, "#") {
			continue
		}
		if !filepath.IsAbs(dep) {
			dep = filepath.Join(filepath.Dir(real), dep)
		}
		fmt.Fprintf(h, "dep %s\x00", dep)
		resolved, err := filepath.EvalSymlinks(dep)
		if errors.Is(err, fs.ErrNotExist) {
			h.Write([]byte("missing\x00"))
			continue
		}
		if err != nil {
			return "", err
		}
		err = filepath.WalkDir(resolved, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if files++; files > maxDepsFiles {
				return fmt.Errorf("%s lists more than %d files", filepath.Base(real), maxDepsFiles)
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(resolved, p)
			if info.IsDir() {
				// Its entries are walked; its times change with
				// every temporary file made in it.
				fmt.Fprintf(h, "dir %s\x00", rel)
				return nil
			}
			ctime, inode, device := statIdentity(info)
			fmt.Fprintf(h, "file %s %v %d %d %d %d %d\x00", rel, info.Mode().Type(), info.Size(), info.ModTime().UnixNano(), ctime, inode, device)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// depsList returns where the list of what the script at path depends on
// is, symlinks resolved: beside path, or else beside the file path is a
// symlink to, where a plugin installed as a symlink keeps it.
func depsList(path string) (string, error) {
	lists := []string{path + depsSuffix}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		lists = append(lists, real+depsSuffix)
	}
	for _, list := range lists {
		real, err := filepath.EvalSymlinks(list)
		if err == nil {
			return real, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("it is a script, and no %s lists what it depends on", filepath.Base(path)+depsSuffix)
}

// file is the cache file of a binary: one per absolute path.
func (c *descCache) file(abs string) string {
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json")
}

// lookup returns the cached description of the binary at path, whose
// dependencies' key is deps (pluginDeps), or nil, and the names of its
// tools whose parameters schema resolves.
func (c *descCache) lookup(path, deps string) (*description, map[string]bool) {
	if c == nil || c.dir == "" {
		return nil, nil
	}
	st, err := statBinary(path)
	if err != nil {
		return nil, nil
	}
	data, err := os.ReadFile(c.file(st.path))
	if err != nil {
		return nil, nil
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.Path != st.path || e.Size != st.size || e.Deps != deps ||
		e.Protocol != wire.ProtocolVersion || e.ProtocolMinor != wire.ProtocolMinor {
		return nil, nil
	}
	refresh := false
	wst := binaryStat{path: e.Path, size: e.Size, mtime: e.ModTime, ctime: e.ChangeTime, inode: e.Inode, device: e.Device}
	if e.ModTime != st.mtime || e.ChangeTime != st.ctime || e.Inode != st.inode || e.Device != st.device || st.ctime == 0 {
		sum, err := fileSHA256(st.path)
		if err != nil || sum != e.SHA256 {
			return nil, nil
		}
		// The same content under a new stat: refresh the entry.
		wst, refresh = st, true
	}
	desc := &description{}
	if len(e.Description) == 0 || json.Unmarshal(e.Description, desc) != nil {
		return nil, nil
	}
	if e.Checker != schemaChecker() {
		// Written by another checker, or before entries said: check
		// the schemas now, once, and record it. The entry keeps the
		// stat it was written with, unless it was refreshed above.
		e.Resolved, e.Checker, refresh = checkedSchemas(desc), schemaChecker(), true
	}
	if refresh {
		c.write(wst, e.SHA256, e.Deps, e.Description, e.Resolved, e.Checker)
	}
	return desc, nameSet(e.Resolved)
}

// nameSet is the set of names.
func nameSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, name := range names {
		set[name] = true
	}
	return set
}

// store records the description of the binary at path, whose
// dependencies' key is deps (pluginDeps, taken before the plugin was
// asked, so that a change made meanwhile is seen next time), and the
// names of its tools whose parameters schema resolved (checkedSchemas).
// Failures only cost a launch next time, so they are not reported.
func (c *descCache) store(path, deps string, desc *description, resolved []string) {
	if c == nil || c.dir == "" || desc == nil {
		return
	}
	st, err := statBinary(path)
	if err != nil {
		return
	}
	sum, err := fileSHA256(st.path)
	if err != nil {
		return
	}
	raw, err := json.Marshal(desc)
	if err != nil {
		return
	}
	// The binary may have changed while it was hashed: then stat differs
	// next time and the hash decides.
	c.write(st, sum, deps, raw, resolved, schemaChecker())
}

func (c *descCache) write(st binaryStat, sum, deps string, desc json.RawMessage, resolved []string, checker string) {
	data, err := json.Marshal(cacheEntry{
		Path: st.path, Size: st.size, ModTime: st.mtime, ChangeTime: st.ctime,
		Inode: st.inode, Device: st.device, SHA256: sum, Deps: deps,
		Protocol: wire.ProtocolVersion, ProtocolMinor: wire.ProtocolMinor,
		Description: desc, Resolved: resolved, Checker: checker,
	})
	if err != nil {
		return
	}
	_ = atomicfile.Write(c.file(st.path), data, 0o600)
}

// lookupID returns the cached description of the source whose identity
// is id (an MCP server's, see MCPServer.identity), or nil. id already
// holds what stat says of the server's files, so nothing is hashed.
func (c *descCache) lookupID(id string) *description {
	if c == nil || c.dir == "" || id == "" {
		return nil
	}
	data, err := os.ReadFile(c.file(MCPSourcePrefix + id))
	if err != nil {
		return nil
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.Path != MCPSourcePrefix+id ||
		e.Protocol != wire.ProtocolVersion || e.ProtocolMinor != wire.ProtocolMinor {
		return nil
	}
	desc := &description{}
	if len(e.Description) == 0 || json.Unmarshal(e.Description, desc) != nil {
		return nil
	}
	return desc
}

// storeID records the description of the source whose identity is id.
func (c *descCache) storeID(id string, desc *description) {
	if c == nil || c.dir == "" || id == "" || desc == nil {
		return
	}
	raw, err := json.Marshal(desc)
	if err != nil {
		return
	}
	c.write(binaryStat{path: MCPSourcePrefix + id}, id, "", raw, nil, "")
}
