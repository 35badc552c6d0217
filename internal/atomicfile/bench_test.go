package atomicfile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkWriteFile replaces a 6-byte file in a subdirectory, as the fs
// plugin's write_file does, in turn with the bare steps of an atomic
// replace (a temporary file written and renamed over the file) with the
// two syncs WriteFile makes (the file before the rename, its directory
// after) and without them, and reports the median of each in
// microseconds: bare minus unsynced is what the syncs cost, WriteFile
// minus bare what the rest of WriteFile costs (the lock, the checks,
// keeping the file's attributes). Taking turns, the three share the
// noise of a busy disk.
func BenchmarkWriteFile(b *testing.B) {
	dir := b.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		b.Fatal(err)
	}
	names := []string{"out/writefile.txt", "out/bare.txt", "out/unsynced.txt"}
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	data := []byte("hello\n")
	bare := func(name string, sync bool) error {
		f, tmp, err := createTemp(root, "out", "tmp")
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		if sync {
			if err := f.Sync(); err != nil {
				return err
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := root.Rename(tmp, name); err != nil {
			return err
		}
		if sync {
			return SyncDir(root, "out")
		}
		return nil
	}
	variants := []func() error{
		func() error {
			_, err := WriteFile(context.Background(), root, names[0], data, Options{Perm: 0o644})
			return err
		},
		func() error { return bare(names[1], true) },
		func() error { return bare(names[2], false) },
	}
	times := make([][]time.Duration, len(variants))
	for b.Loop() {
		for i, v := range variants {
			start := time.Now()
			if err := v(); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	b.ReportMetric(0, "ns/op")
	for i, unit := range []string{"writefile-µs", "bare-µs", "unsynced-µs"} {
		slices.Sort(times[i])
		b.ReportMetric(float64(times[i][len(times[i])/2])/float64(time.Microsecond), unit)
	}
}
