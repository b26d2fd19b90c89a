package gen

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Diff compares files with what dir holds and lists, sorted, every path that
// would be added, changed or removed by Write.
func Diff(dir string, files []File) ([]string, error) {
	want := map[string][]byte{}
	for _, f := range files {
		want[f.Path] = f.Content
	}
	have, err := existing(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for p, content := range want {
		old, ok := have[p]
		switch {
		case !ok:
			out = append(out, "added: "+p)
		case !bytes.Equal(old, content):
			out = append(out, "changed: "+p)
		}
	}
	for p := range have {
		if _, ok := want[p]; !ok {
			out = append(out, "removed: "+p)
		}
	}
	sort.Strings(out)
	return out, nil
}

func existing(dir string) (map[string][]byte, error) {
	have := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		have[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return have, nil
}

// Write makes dir hold exactly files: new and changed files are written
// aside and renamed into place, unchanged files are not touched, and files
// the generator no longer produces are removed (the generator owns dir).
func Write(dir string, files []File) error {
	have, err := existing(dir)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
		if old, ok := have[f.Path]; ok && bytes.Equal(old, f.Content) {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".a2agen-*")
		if err != nil {
			return err
		}
		if _, err := tmp.Write(f.Content); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return err
		}
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		if err := os.Chmod(tmp.Name(), 0o644); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		if err := os.Rename(tmp.Name(), dst); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("writing %s: %w", dst, err)
		}
	}
	for p := range have {
		if !want[p] {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
				return err
			}
		}
	}
	return nil
}
