package nccl

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
)

func TestParseNCCLConfFollowsNCCLRules(t *testing.T) {
	long := strings.Repeat("x", 4093)
	in := "NCCL_IB_TC = 106\n" + // name and value keep their spaces
		"# NCCL_IB_GID_INDEX=3\n" + // comment
		" #NCCL_NOT_A_COMMENT=1\n" + // '#' only counts in column 0
		"no equals sign here\n" +
		"\n" +
		"NCCL_SOCKET_IFNAME=eth0\r\n" + // CRLF stripped
		"A=b=c\n" + // first '=' splits
		"NCCL_IB_TC=200\n" + // "NCCL_IB_TC" (no space) is a new name
		"A=second\n" + // setenv(..., 0): the first A stays
		"=orphan\n" + // empty name: setenv fails, nothing set
		"NCCL_DEBUG=\"INFO\"\n" + // no quote handling
		"CR2=1\r\r\n" + // only one CR is stripped
		"NUL=a\x00b\n" + // C strings end at NUL
		"L=" + long + "M=2\n" + // 4095-byte fgets: the rest is read as its own line
		strings.Repeat("N", 1100) + "=v\n" + // name cut to 1023 bytes
		"LAST=no-newline"
	got := ParseConf([]byte(in))
	want := []Var{
		{"NCCL_IB_TC ", " 106"},
		{" #NCCL_NOT_A_COMMENT", "1"},
		{"NCCL_SOCKET_IFNAME", "eth0"},
		{"A", "b=c"},
		{"NCCL_IB_TC", "200"},
		{"NCCL_DEBUG", `"INFO"`},
		{"CR2", "1\r"},
		{"NUL", "a"},
		{"L", strings.Repeat("x", 1023)},
		{"M", "2"},
		{strings.Repeat("N", 1023), "v"},
		{"LAST", "no-newline"},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w Var
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("var %d: got {%.40q %.40q}, want {%.40q %.40q}", i, g.Name, g.Value, w.Name, w.Value)
			}
		}
	}
}

func TestParseNCCLConfDoRoCE(t *testing.T) {
	// What doRoCE.sh writes into /etc/nccl.conf (reference §C).
	got := ParseConf([]byte("NCCL_IB_TC=106\nNCCL_IB_GID_INDEX=3\n"))
	want := []Var{{"NCCL_IB_TC", "106"}, {"NCCL_IB_GID_INDEX", "3"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

var testNCCLVars = []Var{
	{"NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"},
	{"NCCL_IB_TC", "106"},
	{"NCCL_IB_GID_INDEX", "3"},
	{"NCCL_IB_TIMEOUT", "22"},
}

func TestRenderNCCLConfEmpty(t *testing.T) {
	out, conflicts, err := RenderConf(nil, "gpu-fabric-a", testNCCLVars)
	if err != nil {
		t.Fatal(err)
	}
	want := "# BEGIN rocectl managed block (profile gpu-fabric-a) - do not edit\n" +
		"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" +
		"NCCL_IB_TC=106\n" +
		"NCCL_IB_GID_INDEX=3\n" +
		"NCCL_IB_TIMEOUT=22\n" +
		"# END rocectl managed block\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if len(conflicts) != 0 {
		t.Fatalf("conflicts %v", conflicts)
	}
	// Round trip: NCCL reads back exactly what was asked for, the '=' that
	// starts the HCA value included.
	if got := ParseConf(out); !reflect.DeepEqual(got, testNCCLVars) {
		t.Fatalf("parse(render) = %q, want %q", got, testNCCLVars)
	}
}

func TestRenderNCCLConfMergeKeepsUserLines(t *testing.T) {
	before := "# site defaults\r\n" +
		"NCCL_DEBUG=WARN\r\n" +
		"NCCL_IB_TC=96\n" + // conflicts with the block
		"NCCL_IB_TC = 96\n" + // a different name for NCCL: no conflict
		"# BEGIN rocectl managed block (profile old-name) - do not edit\r\n" +
		"NCCL_IB_TC=104\n" +
		"NCCL_IB_SL=3\n" +
		"# END rocectl managed block\r\n" +
		"  indented junk without equals\n" +
		"NCCL_IB_GID_INDEX=5\n" + // conflicts too
		"NCCL_SOCKET_IFNAME=^lo,docker" // no final newline
	userOnly := "# site defaults\r\n" +
		"NCCL_DEBUG=WARN\r\n" +
		"NCCL_IB_TC=96\n" +
		"NCCL_IB_TC = 96\n" +
		"  indented junk without equals\n" +
		"NCCL_IB_GID_INDEX=5\n" +
		"NCCL_SOCKET_IFNAME=^lo,docker"
	block, _, err := RenderConf(nil, "gpu-fabric-a", testNCCLVars)
	if err != nil {
		t.Fatal(err)
	}
	out, conflicts, err := RenderConf([]byte(before), "gpu-fabric-a", testNCCLVars)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(block) + userOnly; string(out) != want {
		t.Fatalf("got\n%q\nwant\n%q", out, want)
	}
	wantConflicts := []Conflict{
		{Line: 3, Name: "NCCL_IB_TC", UserValue: "96", Managed: "106"},
		{Line: 10, Name: "NCCL_IB_GID_INDEX", UserValue: "5", Managed: "3"},
	}
	if !reflect.DeepEqual(conflicts, wantConflicts) {
		t.Fatalf("conflicts %+v, want %+v", conflicts, wantConflicts)
	}

	// What NCCL now sees: the block's values win, the user's other lines
	// still count.
	env := map[string]string{}
	for _, v := range ParseConf(out) {
		env[v.Name] = v.Value
	}
	for k, v := range map[string]string{
		"NCCL_IB_TC": "106", "NCCL_IB_GID_INDEX": "3", "NCCL_DEBUG": "WARN",
		"NCCL_IB_TC ": " 96", "NCCL_SOCKET_IFNAME": "^lo,docker",
	} {
		if env[k] != v {
			t.Errorf("NCCL sees %q=%q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["NCCL_IB_SL"]; ok {
		t.Error("the old block's NCCL_IB_SL survived")
	}

	// Idempotent.
	again, conflicts2, err := RenderConf(out, "gpu-fabric-a", testNCCLVars)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Fatalf("second render differs:\n%q\n%q", again, out)
	}
	if len(conflicts2) != 2 || conflicts2[0].Line != 9 || conflicts2[1].Line != 12 {
		t.Fatalf("second render conflicts %+v (lines should count in the new file)", conflicts2)
	}
}

func TestRenderNCCLConfRemovesBlockWithEmptyVars(t *testing.T) {
	in := "A=1\n# BEGIN rocectl managed block (profile p) - do not edit\nB=2\n# END rocectl managed block\nC=3\n"
	out, _, err := RenderConf([]byte(in), "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "# BEGIN rocectl managed block (profile p) - do not edit\n# END rocectl managed block\nA=1\nC=3\n"
	if string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

func TestRenderNCCLConfRefusesDamagedBlock(t *testing.T) {
	for name, in := range map[string]string{
		"begin without end": "A=1\n# BEGIN rocectl managed block (profile p) - do not edit\nB=2\n",
		"end without begin": "A=1\n# END rocectl managed block\n",
		"nested begin": "# BEGIN rocectl managed block (profile p) - do not edit\n" +
			"# BEGIN rocectl managed block (profile q) - do not edit\n# END rocectl managed block\n",
	} {
		out, _, err := RenderConf([]byte(in), "p", testNCCLVars)
		if !errors.Is(err, ErrManagedBlock) || out != nil {
			t.Errorf("%s: out %q, err %v; want ErrManagedBlock", name, out, err)
		}
	}
}

func TestRenderNCCLConfValidates(t *testing.T) {
	bad := []Var{
		{"", "1"},
		{"NCCL IB_TC", "1"},
		{"NCCL_IB_TC ", "1"},
		{"A=B", "1"},
		{"#NCCL_IB_TC", "1"},
		{"1NCCL", "1"},
		{strings.Repeat("N", 1024), "1"},
		{"NCCL_IB_TC", ""},
		{"NCCL_IB_TC", " 106"},
		{"NCCL_IB_TC", "106 "},
		{"NCCL_IB_TC", "106\n"},
		{"NCCL_IB_TC", "1\r06"},
		{"NCCL_IB_TC", "1\x0006"},
		{"NCCL_IB_HCA", strings.Repeat("m", 1024)},
	}
	for _, v := range bad {
		_, _, err := RenderConf(nil, "p", []Var{v})
		var ce *ConfError
		if !errors.As(err, &ce) {
			t.Errorf("%.30q=%.30q: err %v, want *ConfError", v.Name, v.Value, err)
		}
	}
	if _, _, err := RenderConf(nil, "p", []Var{{"A", "1"}, {"A", "2"}}); err == nil {
		t.Error("a name defined twice was accepted")
	}
	if _, _, err := RenderConf(nil, "p\nNCCL_IB_TC=0", nil); err == nil {
		t.Error("a profile name with a newline was accepted")
	}
	// Values NCCL reads verbatim and rocectl writes: '=', '#', ',' and ':'
	// inside the value are fine.
	ok := []Var{{"NCCL_IB_HCA", "=mlx5_0:1"}, {"NCCL_SOCKET_IFNAME", "^docker#1,lo"}, {"nccl_lower", "x=y"}}
	out, _, err := RenderConf(nil, "p", ok)
	if err != nil {
		t.Fatal(err)
	}
	if got := ParseConf(out); !reflect.DeepEqual(got, ok) {
		t.Fatalf("got %q, want %q", got, ok)
	}
}

func ncclTestRoot(t *testing.T) (nic.FS, string) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	return nic.NewFS(root, false), filepath.Join(root, "etc", "nccl.conf")
}

func TestWriteNCCLConfNewFile(t *testing.T) {
	fs, file := ncclTestRoot(t)
	data, _, err := RenderConf(nil, "p", testNCCLVars)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteConf(fs, "/etc/nccl.conf", data); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %q, %v", got, err)
	}
	st, _ := os.Stat(file)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(file))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries (temporary file left behind?)", len(ents))
	}
}

func TestWriteNCCLConfExistingFileModeAndOwner(t *testing.T) {
	fs, file := ncclTestRoot(t)
	if err := os.WriteFile(file, []byte("NCCL_DEBUG=WARN\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		uid, gid = 4242, 4343
		if err := os.Chown(file, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data, _, err := RenderConf([]byte("NCCL_DEBUG=WARN\n"), "p", testNCCLVars)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteConf(fs, "/etc/nccl.conf", data); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (NCCL ignores a file the job's user cannot read)", st.Mode().Perm())
	}
	sys := st.Sys().(*syscall.Stat_t)
	if int(sys.Uid) != uid || int(sys.Gid) != gid {
		t.Errorf("owner %d:%d, want %d:%d kept", sys.Uid, sys.Gid, uid, gid)
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, data) {
		t.Errorf("content %q", got)
	}
}

func TestWriteNCCLConfUnchangedIsNoop(t *testing.T) {
	fs, file := ncclTestRoot(t)
	data := []byte("NCCL_IB_TC=106\n")
	if err := WriteConf(fs, "/etc/nccl.conf", data); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(file)
	if err := WriteConf(fs, "/etc/nccl.conf", data); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(file)
	if st1.Sys().(*syscall.Stat_t).Ino != st2.Sys().(*syscall.Stat_t).Ino {
		t.Error("identical content was rewritten (new inode)")
	}
	if err := WriteConf(fs, "/etc/nccl.conf", []byte("NCCL_IB_TC=104\n")); err != nil {
		t.Fatal(err)
	}
	st3, _ := os.Stat(file)
	if st3.Sys().(*syscall.Stat_t).Ino == st2.Sys().(*syscall.Stat_t).Ino {
		t.Error("new content written in place, not by rename")
	}
}

func TestWriteNCCLConfRefusals(t *testing.T) {
	fs, file := ncclTestRoot(t)
	ro := nic.NewFS(fs.Root(), true)
	if err := WriteConf(ro, "/etc/nccl.conf", []byte("A=1\n")); !errors.Is(err, nic.ErrReadOnly) {
		t.Errorf("read-only fs: err %v, want nic.ErrReadOnly", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Error("read-only fs: the file was created")
	}
	if err := WriteConf(fs, "/nonexistent/nccl.conf", []byte("A=1\n")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: err %v, want ErrNotExist", err)
	}
	if err := WriteConf(fs, "etc/nccl.conf", []byte("A=1\n")); err == nil {
		t.Error("relative path accepted")
	}
	target := filepath.Join(fs.Root(), "etc", "real.conf")
	if err := os.WriteFile(target, []byte("A=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.conf", file); err != nil {
		t.Fatal(err)
	}
	if err := WriteConf(fs, "/etc/nccl.conf", []byte("A=1\n")); err == nil {
		t.Error("symlink replaced")
	}
	if got, _ := os.ReadFile(target); string(got) != "A=0\n" {
		t.Errorf("symlink target changed to %q", got)
	}
}

func TestWriteNCCLConfKeepsErrnoENOTDIR(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "etc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteConf(nic.NewFS(root, false), "/etc/nccl.conf", []byte("A=1\n"))
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("err %v, want ENOTDIR", err)
	}
}

func TestWriteNCCLConfKeepsErrnoEACCES(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions; the EACCES path needs an unprivileged user")
	}
	fs, _ := ncclTestRoot(t)
	dir := filepath.Join(fs.Root(), "etc")
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if err := WriteConf(fs, "/etc/nccl.conf", []byte("A=1\n")); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("err %v, want EACCES", err)
	}
}

// The attack UpdateConf closes: a user who owns the directory of the file
// root rewrites (NCCL also reads ~/.nccl.conf) puts a hard link to a file
// they cannot read at the name, or a symlink, and hopes root copies its
// lines into a new file they can. Both are refused before render sees a
// byte, and nothing is written.
func TestUpdateNCCLConfRefusesLinkedFiles(t *testing.T) {
	fs, file := ncclTestRoot(t)
	secret := filepath.Join(fs.Root(), "secret")
	if err := os.WriteFile(secret, []byte("aws_secret_access_key=SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, link := range []func(string, string) error{os.Link, os.Symlink} {
		if err := link(secret, file); err != nil {
			t.Fatal(err)
		}
		called := false
		err := UpdateConf(fs, "/etc/nccl.conf", nil, func(existing []byte) ([]byte, error) {
			called = true
			return append(existing, "NCCL_IB_TC=106\n"...), nil
		})
		if err == nil || called {
			t.Errorf("linked file: err %v, render called %v; want refused before render", err, called)
		}
		if got, _ := os.ReadFile(secret); string(got) != "aws_secret_access_key=SECRET\n" {
			t.Errorf("the linked file now holds %q", got)
		}
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(filepath.Dir(file))
		if len(ents) != 0 {
			t.Errorf("etc holds %d entries after the refusal", len(ents))
		}
	}
}

// Between reading the file and replacing it, its directory is swapped for
// a symlink to another one (the race a user who can write the directory's
// parent would run): the new file still lands in the directory whose file
// was read, never in the symlink's target.
func TestUpdateNCCLConfWritesWhereItRead(t *testing.T) {
	fs, file := ncclTestRoot(t)
	root := fs.Root()
	if err := os.WriteFile(file, []byte("NCCL_DEBUG=WARN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "elsewhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := UpdateConf(fs, "/etc/nccl.conf", nil, func(existing []byte) ([]byte, error) {
		if err := os.Rename(filepath.Join(root, "etc"), filepath.Join(root, "etc.old")); err != nil {
			return nil, err
		}
		if err := os.Symlink("elsewhere", filepath.Join(root, "etc")); err != nil {
			return nil, err
		}
		return append(existing, "NCCL_IB_TC=106\n"...), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "etc.old", "nccl.conf")); string(got) != "NCCL_DEBUG=WARN\nNCCL_IB_TC=106\n" {
		t.Errorf("the directory that was read holds %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "elsewhere")); len(ents) != 0 {
		t.Errorf("the write followed the swapped-in symlink: %d entries there", len(ents))
	}
}

// RestoreConf puts back the saved mode and content, and removes a file
// that did not exist before; a symlink put at the name since is removed as
// the link, its target untouched.
func TestRestoreNCCLConf(t *testing.T) {
	fs, file := ncclTestRoot(t)
	if err := WriteConf(fs, "/etc/nccl.conf", []byte("NCCL_IB_TC=106\n")); err != nil {
		t.Fatal(err)
	}
	if err := RestoreConf(fs, "/etc/nccl.conf", nil, []byte("OLD=1\n"), 0o600, true); err != nil {
		t.Fatal(err)
	}
	data, mode, exists, err := ReadConf(fs, "/etc/nccl.conf")
	if err != nil || !exists || string(data) != "OLD=1\n" || mode != 0o600 {
		t.Errorf("restored %q mode %o exists %v err %v", data, mode, exists, err)
	}
	target := filepath.Join(fs.Root(), "keep")
	if err := os.WriteFile(target, []byte("KEEP=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, file); err != nil {
		t.Fatal(err)
	}
	if err := RestoreConf(fs, "/etc/nccl.conf", nil, nil, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the name is still there: %v", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "KEEP=1\n" {
		t.Errorf("the link's target holds %q", got)
	}
	if err := RestoreConf(fs, "/etc/nccl.conf", nil, nil, 0, false); err != nil {
		t.Errorf("removing a file that is already gone: %v", err)
	}
}
