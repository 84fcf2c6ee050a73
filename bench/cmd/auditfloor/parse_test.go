package main

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Lines of `strace -f -y -e trace=openat2,getdents64 -o LIST rocectl audit
// -p profiles/fat-tree-32gpu-100g.toml --snapshot /tmp/snap64` (strace 6.1,
// Linux 6.18), in their order, a few left out between them. Threads 18265
// and 18268 interleave, so strace split some calls in two.
const captured = `18265 --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL, si_pid=18262, si_uid=0} ---
18268 getdents64(8</tmp/snap64/sys/class/infiniband>, 0x37d489be000 /* 66 entries */, 8192) = 2096
18268 getdents64(8</tmp/snap64/sys/class/infiniband>, 0x37d489be000 /* 0 entries */, 8192) = 0
18268 openat2(5</tmp/snap64>, "sys/class/infiniband/mlx5_7", {flags=O_RDONLY|O_CLOEXEC|O_PATH|O_DIRECTORY, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 70</tmp/snap64/sys/devices/pci0000:46/0000:46:00.0/0000:47:00.1/infiniband/mlx5_7>
18268 openat2(70</tmp/snap64/sys/devices/pci0000:46/0000:46:00.0/0000:47:00.1/infiniband/mlx5_7>, "ports/1/link_layer", {flags=O_RDONLY|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_BENEATH}, 24 <unfinished ...>
18264 openat2(69</tmp/snap64/sys/devices/pci0000:b6/0000:b6:00.0/0000:b7:00.1/infiniband/mlx5_63>, "board_id", {flags=O_RDONLY|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_BENEATH}, 24 <unfinished ...>
18268 <... openat2 resumed>)            = 71</tmp/snap64/sys/devices/pci0000:46/0000:46:00.0/0000:47:00.1/infiniband/mlx5_7/ports/1/link_layer>
18264 <... openat2 resumed>)            = 72</tmp/snap64/sys/devices/pci0000:b6/0000:b6:00.0/0000:b7:00.1/infiniband/mlx5_63/board_id>
18268 openat2(70</tmp/snap64/sys/devices/pci0000:46/0000:46:00.0/0000:47:00.1/infiniband/mlx5_7>, "device/numa_node", {flags=O_RDONLY|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_BENEATH}, 24) = -1 EXDEV (Invalid cross-device link)
18268 openat2(5</tmp/snap64>, "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/infiniband/mlx5_1/device/net", {flags=O_RDONLY|O_CLOEXEC|O_DIRECTORY, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 19</tmp/snap64/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/net>
18268 getdents64(19</tmp/snap64/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/net>, 0x37d489be000 /* 3 entries */, 8192) = 80
18268 getdents64(19</tmp/snap64/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/net>, 0x37d489be000 /* 0 entries */, 8192) = 0
18265 openat2(5</tmp/snap64>, "sys/devices/pci0000:5a/0000:5a:00.0/0000:5b:00.0/infiniband/mlx5_16/device/net", {flags=O_RDONLY|O_CLOEXEC|O_DIRECTORY, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 13</tmp/snap64/sys/devices/pci0000:5a/0000:5a:00.0/0000:5b:00.0/net>
18268 openat2(5</tmp/snap64>, "sys/class/net/ens1f1np1/master", {flags=O_RDONLY|O_CLOEXEC|O_PATH, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = -1 ENOENT (No such file or directory)
18265 getdents64(13</tmp/snap64/sys/devices/pci0000:5a/0000:5a:00.0/0000:5b:00.0/net>,  <unfinished ...>
18268 openat2(5</tmp/snap64>, "sys/class/net/ens1f1np1/bonding", {flags=O_RDONLY|O_CLOEXEC|O_PATH, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24 <unfinished ...>
18265 <... getdents64 resumed>0x37d48b60000 /* 3 entries */, 8192) = 80
18268 <... openat2 resumed>)            = -1 ENOENT (No such file or directory)
18265 getdents64(13</tmp/snap64/sys/devices/pci0000:5a/0000:5a:00.0/0000:5b:00.0/net>,  <unfinished ...>
18265 <... getdents64 resumed>0x37d48b60000 /* 0 entries */, 8192) = 0
18264 +++ exited with 2 +++
`

func TestParseCaptured(t *testing.T) {
	calls, st, err := parseList("LIST", strings.NewReader(captured), false)
	if err != nil {
		t.Fatal(err)
	}
	const (
		root   = "/tmp/snap64"
		mlx5_7 = "/tmp/snap64/sys/devices/pci0000:46/0000:46:00.0/0000:47:00.1/infiniband/mlx5_7"
		mlx63  = "/tmp/snap64/sys/devices/pci0000:b6/0000:b6:00.0/0000:b7:00.1/infiniband/mlx5_63"
		file   = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
		inRoot = unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_IN_ROOT
		below  = unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH
	)
	want := []call{
		// Listed through a descriptor no openat2 returned (os.ReadDir's openat).
		{line: 3, kind: kindList, base: "/tmp/snap64/sys/class/infiniband", outcome: opened},
		{line: 4, kind: kindPath, base: root, rel: "sys/class/infiniband/mlx5_7", flags: unix.O_CLOEXEC | unix.O_PATH | unix.O_DIRECTORY, resolve: inRoot, outcome: opened, result: mlx5_7},
		// Split by thread 18264's call, joined with its resumed half.
		{line: 5, kind: kindFile, base: mlx5_7, rel: "ports/1/link_layer", flags: file, resolve: below, outcome: opened, result: mlx5_7 + "/ports/1/link_layer"},
		{line: 6, kind: kindFile, base: mlx63, rel: "board_id", flags: file, resolve: below, outcome: opened, result: mlx63 + "/board_id"},
		{line: 9, kind: kindFile, base: mlx5_7, rel: "device/numa_node", flags: file, resolve: below, outcome: failed, errno: "EXDEV"},
		// Its listing (lines 11-12) is the replay of this open's.
		{line: 10, kind: kindDir, base: root, rel: "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/infiniband/mlx5_1/device/net", flags: unix.O_CLOEXEC | unix.O_DIRECTORY, resolve: inRoot, outcome: opened, result: "/tmp/snap64/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/net"},
		{line: 13, kind: kindDir, base: root, rel: "sys/devices/pci0000:5a/0000:5a:00.0/0000:5b:00.0/infiniband/mlx5_16/device/net", flags: unix.O_CLOEXEC | unix.O_DIRECTORY, resolve: inRoot, outcome: opened, result: "/tmp/snap64/sys/devices/pci0000:5a/0000:5a:00.0/0000:5b:00.0/net"},
		{line: 14, kind: kindPath, base: root, rel: "sys/class/net/ens1f1np1/master", flags: unix.O_CLOEXEC | unix.O_PATH, resolve: inRoot, outcome: failed, errno: "ENOENT"},
		// Split, and failed.
		{line: 16, kind: kindPath, base: root, rel: "sys/class/net/ens1f1np1/bonding", flags: unix.O_CLOEXEC | unix.O_PATH, resolve: inRoot, outcome: failed, errno: "ENOENT"},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d:\n%+v", len(calls), len(want), calls)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("call %d:\n got %+v\nwant %+v", i, calls[i], want[i])
		}
	}
	if want := (listStats{lines: 21, joined: 5, getdents: 6, ignored: 2}); st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

// strace escapes '>' and '\' in the path -y prints (octal \76, \\), and
// writes lines without a thread id when run without -f.
func TestParseEscapedPathNoThreadID(t *testing.T) {
	const line = `getdents64(3</tmp/fl t/a\76b\\c>, 0x55cf88219260 /* 0 entries */, 32768) = 0` + "\n" +
		`openat2(3</tmp/fl t/a\76b\\c>, "x\"y\1z\x41", {flags=O_RDONLY|0x40000000, resolve=0}, 24) = 4</tmp/fl t/a\76b\\c/x"y` + "\x01" + `zA>` + "\n"
	calls, _, err := parseList("LIST", strings.NewReader(line), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []call{
		{line: 1, kind: kindList, base: `/tmp/fl t/a>b\c`, outcome: opened},
		{line: 2, kind: kindFile, base: `/tmp/fl t/a>b\c`, rel: "x\"y\x01zA", flags: 0x40000000, outcome: opened, result: "/tmp/fl t/a>b\\c/x\"y\x01zA"},
	}
	if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
		t.Errorf("got %+v\nwant %+v", calls, want)
	}
}

// A thread that is killed mid-call leaves an unfinished half only: the
// open was still made.
func TestParseNeverResumed(t *testing.T) {
	const list = `18268 openat2(5</tmp/snap64>, "sys/class/net/ens1f1np1/bonding", {flags=O_RDONLY|O_CLOEXEC|O_PATH, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24 <unfinished ...>
18268 +++ killed by SIGKILL +++
`
	calls, _, err := parseList("LIST", strings.NewReader(list), false)
	if err != nil {
		t.Fatal(err)
	}
	want := call{line: 1, kind: kindPath, base: "/tmp/snap64", rel: "sys/class/net/ens1f1np1/bonding", flags: unix.O_CLOEXEC | unix.O_PATH, resolve: unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_IN_ROOT, outcome: unknown}
	if len(calls) != 1 || calls[0] != want {
		t.Errorf("got %+v\nwant %+v", calls, want)
	}
}

// Every problem, each at its line and column; the good lines still parse.
func TestParseErrors(t *testing.T) {
	const list = `18268 openat2(5, "sys/class/infiniband/mlx5_7", {flags=O_RDONLY|O_PATH, resolve=RESOLVE_IN_ROOT}, 24) = 8
18268 openat2(5</tmp/snap64>, "state", {flags=O_WRONLY|O_CREAT|O_TRUNC, mode=0644, resolve=RESOLVE_BENEATH}, 24) = 8</tmp/snap64/state>
18268 openat2(5</tmp/snap64>, "a", {flags=O_RDONLY|O_FROB, resolve=RESOLVE_BENEATH}, 24) = 8</tmp/snap64/a>
18264 <... openat2 resumed>)            = 72</tmp/snap64/b>
18268 openat2(5</tmp/snap64>, "c", {flags=O_RDONLY, resolve=RESOLVE_BENEATH|RESOLVE_SOMEDAY}, 24 <unfinished ...>
18268 <... openat2 resumed>)            = 9</tmp/snap64/c>
18268 openat2(5</tmp/snap64>, "ok", {flags=O_RDONLY, resolve=RESOLVE_BENEATH}, 24) = 9</tmp/snap64/ok>
`
	calls, _, err := parseList("LIST", strings.NewReader(list), false)
	want := []string{
		"LIST:1:16: want the directory descriptor with its path, as strace -y prints it (5</path>)",
		"LIST:2:47: flags O_WRONLY|O_CREAT|O_TRUNC could write: the replay only reads (-writes replays writes, on a copy of the tree)",
		"LIST:3:52: unknown flag \"O_FROB\"",
		"LIST:4:7: openat2 resumed, but thread 18264 has no unfinished openat2 before it",
		"LIST:5:77: unknown flag \"RESOLVE_SOMEDAY\"",
	}
	if err == nil {
		t.Fatal("no error")
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if len(calls) != 1 || calls[0].rel != "ok" {
		t.Errorf("calls %+v, want the one good line's", calls)
	}
}

// Lines of `strace -f -y -s 4096 -e trace=openat2,getdents64,write -o LIST
// rocectl --root /dev/shm/r --state-dir /tmp/st/state apply -p bench.toml`
// (strace 6.1, Linux 6.1), a few left out between them: an attribute
// written and read back, one whose write strace split, the plan printed
// and the journal written (neither is the tree's).
const capturedWrites = `9083  openat2(11</dev/shm/r>, "sys/class/net/ens1f1np1/ecn/roce_np/enable/1", {flags=O_WRONLY|O_TRUNC|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 14</dev/shm/r/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/net/ens1f1np1/ecn/roce_np/enable/1>
9083  write(14</dev/shm/r/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/net/ens1f1np1/ecn/roce_np/enable/1>, "0\n", 2) = 2
9083  openat2(11</dev/shm/r>, "sys/class/net/ens1f1np1/ecn/roce_np/enable/1", {flags=O_RDONLY|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 14</dev/shm/r/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/net/ens1f1np1/ecn/roce_np/enable/1>
9085  write(1</tmp/st/out.txt>, "~ ens1f0np0 (mlx5_0 port 1, veth)\n", 34 <unfinished ...>
9083  openat2(11</dev/shm/r>, "sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos", {flags=O_WRONLY|O_TRUNC|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 15</dev/shm/r/sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos>
9085  <... write resumed>)              = 34
9083  write(15</dev/shm/r/sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos>, "106\n", 4 <unfinished ...>
9085  write(14</tmp/st/state/journal/.20261204T104236Z-044002.json.tmp2399380911>, "{\"format\":\"rocectl-journal\"}", 28) = 28
9083  <... write resumed>)              = 4
`

// With writes, an open for writing is replayed with the bytes the list
// shows written through its descriptor; writes through other descriptors
// (the output, the journal, which reuses a number) are not the tree's.
func TestParseWrites(t *testing.T) {
	calls, _, err := parseList("LIST", strings.NewReader(capturedWrites), true)
	if err != nil {
		t.Fatal(err)
	}
	const dev = "/dev/shm/r/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/net/ens1f1np1/ecn/roce_np/enable/1"
	w := unix.O_WRONLY | unix.O_TRUNC | unix.O_NONBLOCK | unix.O_CLOEXEC
	inRoot := uint64(unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_IN_ROOT)
	want := []call{
		{line: 1, kind: kindWrite, base: "/dev/shm/r", rel: "sys/class/net/ens1f1np1/ecn/roce_np/enable/1", flags: uint64(w), resolve: inRoot, outcome: opened, result: dev, data: "0\n"},
		{line: 3, kind: kindFile, base: "/dev/shm/r", rel: "sys/class/net/ens1f1np1/ecn/roce_np/enable/1", flags: unix.O_NONBLOCK | unix.O_CLOEXEC, resolve: inRoot, outcome: opened, result: dev},
		{line: 5, kind: kindWrite, base: "/dev/shm/r", rel: "sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos", flags: uint64(w), resolve: inRoot, outcome: opened, result: "/dev/shm/r/sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos", data: "106\n"},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d:\n%+v", len(calls), len(want), calls)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("call %d:\n got %+v\nwant %+v", i, calls[i], want[i])
		}
	}
	least := leastCalls(calls)
	if len(least) != 6 || least[0].kind != kindFile || least[1] != calls[0] || least[2] != least[0] || least[4] != calls[2] {
		t.Errorf("least calls %+v, want read, write, read of each written attribute", least)
	}
}

// Writes allowed or not, an open that could create a file is refused, and
// so are bytes strace cut short.
func TestParseWritesErrors(t *testing.T) {
	const list = `1 openat2(5</r>, "a", {flags=O_WRONLY|O_CREAT|O_TRUNC, mode=0644, resolve=RESOLVE_BENEATH}, 24) = 8</r/a>
1 openat2(5</r>, "b", {flags=O_WRONLY|O_APPEND, resolve=RESOLVE_BENEATH}, 24) = 8</r/b>
1 openat2(5</r>, "c", {flags=O_WRONLY|O_TRUNC, resolve=RESOLVE_BENEATH}, 24) = 8</r/c>
1 write(8</r/c>, "0123456789abcdef"..., 40) = 40
`
	_, _, err := parseList("LIST", strings.NewReader(list), true)
	want := []string{
		"LIST:1:30: flags O_WRONLY|O_CREAT|O_TRUNC could create a file or write past its end: the replay writes only what is there",
		"LIST:2:30: flags O_WRONLY|O_APPEND could create a file or write past its end: the replay writes only what is there",
		"LIST:4:36: the bytes written are cut short: trace with -s 4096",
	}
	if err == nil {
		t.Fatal("no error")
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
