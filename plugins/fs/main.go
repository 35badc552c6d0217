// Command agenthost-plugin-fs serves the file system tools: read_file,
// read_multiple_files, write_file, list_dir, file_info, mkdir, remove
// (opt-in), move and edit_file.
//
// Every path stays inside the call's workspace roots (sdk.Roots): a path
// is placed in a root lexically, its symbolic links are followed one hop
// at a time and each target placed again (so links between roots work and
// links out of them are refused), and every file operation then goes
// through that root's os.Root, which also refuses a path swapped for a
// link after the check. A refused path is the error
// `path "P" is outside the workspace roots`. A root of / opts out.
//
// Errors name a path as the model gave it, and say what was wrong in the
// tool's words, never Go's; answers name it relative to its root. A name
// holding control characters, bidirectional marks or bytes that are not
// UTF-8 is printed Go-quoted (textsafe.Name), so it cannot forge lines.
// Arguments whose text is not UTF-8, or whose numbers no int64 holds, are
// refused before they are decoded.
//
// Writes (write_file, edit_file) replace a file atomically through
// atomicfile: writers of one file take turns under an advisory lock,
// across processes; an edit applies to the content it read, or fails
// saying that the file changed under it. A replaced file keeps its mode,
// owner, group and extended attributes; its other hard links keep the old
// content, and the answer says so. Temporary files are named
// .agenthost-*.tmp, removed when a call fails or is cancelled, and swept
// when the process that made them is gone. The limits:
//   - read_file returns at most 256 KiB of text per call, cut at a line
//     boundary with a note giving the offset to read on from; base64
//     reads files up to 10 MiB and refuses larger ones.
//   - read_multiple_files reads 1 to 100 files a call, each as read_file
//     reads it, under a header "==> PATH <==", and returns at most 256 KiB
//     of text in all: the file that does not fit is cut at a line
//     boundary with a note giving the read_file call that reads on, and
//     the files after it are left out, named in a last note. A file that
//     fails shows its error in its place; the call fails only when every
//     file fails.
//   - list_dir shows sizes in bytes under 1 KiB, then in KiB, MiB, ... with
//     one decimal; at most 500 entries unless max_entries says otherwise;
//     depth at most 5; links are shown, never entered; entries matching
//     an exclude glob are left out at every level, and an excluded
//     directory is never opened. Its structured result is the same
//     listing as a tree.
//   - file_info describes 1 to 100 paths a call, links not followed; the
//     call fails only when every path fails.
//   - edit_file edits utf-8 text files up to 10 MiB: one edit
//     (old_string, new_string) or a list (edits) applied in order, each to
//     the text the ones before it left, written together in one write or
//     not at all; an edit that matches more than once without replace_all
//     is refused with the lines it matches. dry_run answers with the diff
//     and writes nothing.
//   - move never replaces an existing destination without overwrite,
//     using renameat2(RENAME_NOREPLACE) on Linux (link and unlink for
//     files where a file system lacks it); across file systems it copies
//     to a temporary name beside the destination, syncs the copy, renames
//     it into place the same way, and only then removes the source. Until
//     that rename a cancelled or failed move removes its copy and leaves
//     the source alone. A move or remove of a directory holding a
//     workspace root is refused.
package main

import (
	"os"
	"runtime"

	"github.com/agenthost/agenthost/sdk"
)

func main() {
	// One processor for Go code. A call's work is system calls, which
	// run in parallel all the same (the runtime hands the processor on
	// while one blocks), and a little CPU. With more processors, each of
	// gRPC's hand-offs between goroutines (the connection's reader, the
	// handler, the writer) wakes another thread on another CPU, which on
	// a virtual machine costs more than the call's own work: one
	// processor cuts a small call's round trip by about a quarter
	// (BenchmarkOneShot's mcp_calls). A GOMAXPROCS the user set wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	sdk.ServePlugin(sdk.Plugin{
		Tools: []sdk.Tool{readFile, readMultipleFiles, writeFile, listDir, fileInfo, mkdir, remove, move, editFile},
		// The tools read and write in the roots, and nowhere else.
		Permissions: sdk.Permissions{Roots: sdk.RootsReadWrite},
	})
}
