package mcptest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Registry starts an npm registry on 127.0.0.1 that serves every package
// installed in tests/mcp-servers/node_modules, at the versions installed
// there (those of the committed lock file), and returns its URL. npm,
// npx, pnpm and the like pointed at it (npm_config_registry=URL) install
// the reference MCP servers without the network: each package's
// package.json is its version's manifest, and its tarball is made, once
// per test process, from its installed directory. A name it does not hold
// is answered 404. The server is closed in t.Cleanup.
func Registry(t testing.TB) (url string) {
	t.Helper()
	Node(t)
	reg := loadRegistry(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.serve(w, r, "http://"+r.Host)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// registry is what Registry serves: each package's versions, by name.
type registry struct {
	packages map[string]map[string]*npmPackage // name → version → package
}

// npmPackage is one installed package: its directory and manifest, and
// its tarball once made.
type npmPackage struct {
	dir      string
	manifest map[string]any
	once     sync.Once
	tarball  []byte
	err      error
}

var (
	registryOnce sync.Once
	registryData *registry
	registryErr  error
)

// loadRegistry reads the installed packages, once per test process.
func loadRegistry(t testing.TB) *registry {
	t.Helper()
	root := filepath.Join(Dir(t), "node_modules")
	entry(t, "server-everything") // fails, with the hint, when nothing is installed
	registryOnce.Do(func() { registryData, registryErr = readPackages(root) })
	if registryErr != nil {
		t.Fatalf("mcptest: reading the packages of %s: %v", root, registryErr)
	}
	return registryData
}

// readPackages finds every package under root, a node_modules directory,
// nested node_modules directories included.
func readPackages(root string) (*registry, error) {
	reg := &registry{packages: map[string]map[string]*npmPackage{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".bin" {
			return fs.SkipDir
		}
		if d.IsDir() || d.Name() != "package.json" {
			return nil
		}
		dir := filepath.Dir(path)
		// A package is a directory right under a node_modules directory,
		// or under a scope there (node_modules/@scope/name).
		parent := filepath.Dir(dir)
		if filepath.Base(parent) != "node_modules" && (!strings.HasPrefix(filepath.Base(parent), "@") || filepath.Base(filepath.Dir(parent)) != "node_modules") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		name, _ := m["name"].(string)
		version, _ := m["version"].(string)
		if name == "" || version == "" {
			return nil
		}
		if reg.packages[name] == nil {
			reg.packages[name] = map[string]*npmPackage{}
		}
		reg.packages[name][version] = &npmPackage{dir: dir, manifest: m}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(reg.packages) == 0 {
		return nil, fmt.Errorf("no packages installed: %s", hint)
	}
	return reg, nil
}

// serve answers a package's document (GET /NAME, /@SCOPE%2fNAME) or a
// tarball (GET /-/tarball/NAME/VERSION).
func (reg *registry) serve(w http.ResponseWriter, r *http.Request, base string) {
	path, err := url.PathUnescape(r.URL.EscapedPath())
	if err != nil || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	path = strings.TrimPrefix(path, "/")
	if rest, ok := strings.CutPrefix(path, "-/tarball/"); ok {
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		pkg := reg.packages[rest[:i]][rest[i+1:]]
		if pkg == nil {
			http.NotFound(w, r)
			return
		}
		data, err := pkg.pack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
		return
	}
	versions := reg.packages[path]
	if versions == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"Not found"}`))
		return
	}
	doc := map[string]any{"name": path}
	all := map[string]any{}
	var latest string
	for v, pkg := range versions {
		data, err := pkg.pack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		m := make(map[string]any, len(pkg.manifest)+1)
		for k, x := range pkg.manifest {
			m[k] = x
		}
		sha := sha512.Sum512(data)
		sum := sha1.Sum(data)
		m["dist"] = map[string]any{
			"tarball":   base + "/-/tarball/" + path + "/" + v,
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha[:]),
			"shasum":    hex.EncodeToString(sum[:]),
		}
		all[v] = m
		if latest == "" || newer(v, latest) {
			latest = v
		}
	}
	doc["versions"] = all
	doc["dist-tags"] = map[string]string{"latest": latest}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

// newer reports whether version a is above b, comparing the numbers of
// MAJOR.MINOR.PATCH (what the installed packages use).
func newer(a, b string) bool {
	num := func(v string) []int {
		v, _, _ = strings.Cut(v, "-")
		var out []int
		for _, f := range strings.Split(v, ".") {
			n := 0
			fmt.Sscan(f, &n)
			out = append(out, n)
		}
		return out
	}
	return slices.Compare(num(a), num(b)) > 0
}

// pack is the package's tarball: its directory, without its own
// node_modules, under package/, as npm packs it.
func (p *npmPackage) pack() ([]byte, error) {
	p.once.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.NoCompression)
		tw := tar.NewWriter(zw)
		err := filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(p.dir, path)
			if d.IsDir() {
				if d.Name() == "node_modules" {
					return fs.SkipDir
				}
				return nil
			}
			info, err := d.Info()
			if err != nil || !info.Mode().IsRegular() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			hdr := &tar.Header{Name: "package/" + filepath.ToSlash(rel), Mode: int64(info.Mode().Perm() | 0o644), Size: int64(len(data)), Typeflag: tar.TypeReg}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		})
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = zw.Close()
		}
		p.tarball, p.err = buf.Bytes(), err
	})
	return p.tarball, p.err
}
