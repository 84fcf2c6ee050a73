package nictest

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fsImmutableFL is FS_IMMUTABLE_FL (include/uapi/linux/fs.h), the flag
// `chattr +i` sets.
const fsImmutableFL = 0x10

// RefuseWrites makes the kernel refuse every change to path until the test
// ends: it sets the file's immutable flag, so opening it for writing,
// renaming over it, and (for a directory) creating or removing its entries
// fail with EPERM, for root too, while reads go on as before. That is how a
// sysfs attribute that rejects a value looks to a caller that writes it and
// then reads it back, without a fault hook in the code under test.
//
// The test is skipped when the file system or the process cannot set the
// flag (tmpfs before Linux 6.0, no CAP_LINUX_IMMUTABLE).
func RefuseWrites(t testing.TB, path string) {
	t.Helper()
	old, err := setFlags(path, func(f int) int { return f | fsImmutableFL })
	switch {
	case errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM):
		t.Skipf("cannot mark %s immutable here: %v", path, err)
	case err != nil:
		t.Fatal(err)
	}
	// Registered after the caller's TempDir, so it runs before the
	// directory is removed (an immutable file cannot be).
	t.Cleanup(func() {
		if _, err := setFlags(path, func(int) int { return old }); err != nil {
			t.Errorf("restoring the flags of %s: %v", path, err)
		}
	})
}

// setFlags applies fn to path's inode flags (FS_IOC_GETFLAGS /
// FS_IOC_SETFLAGS, which take an int) and returns the flags it had.
func setFlags(path string, fn func(int) int) (int, error) {
	f, err := os.Open(path) // a directory opens read-only too
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return 0, &os.PathError{Op: "FS_IOC_GETFLAGS", Path: path, Err: err}
	}
	old := int(int32(flags))
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, fn(old)); err != nil {
		return 0, &os.PathError{Op: "FS_IOC_SETFLAGS", Path: path, Err: err}
	}
	return old, nil
}
