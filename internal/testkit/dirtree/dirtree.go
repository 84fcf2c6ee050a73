package dirtree

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Read returns, by path relative to root, every file's content, every
// link's target as "-> target", and every directory as "path/" with an
// empty value. Links are recorded, not followed: sysfs trees loop.
func Read(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		case d.IsDir():
			out[rel+"/"] = ""
		default:
			data, err := os.ReadFile(p)
			out[rel] = string(data)
			return err
		}
		return nil
	})
	return out, err
}
