package thp

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

type node struct {
	name string
	next *node
	n    [9]byte
}

// A large slice starts within one value of a huge page boundary and holds
// n values; a small one is a plain make. Both are ordinary Go memory.
func TestSlice(t *testing.T) {
	check := func(t *testing.T, cap0, n, size int, addr uintptr) {
		t.Helper()
		if cap0 != n {
			t.Errorf("cap %d, want %d", cap0, n)
		}
		if n*size >= PageSize/2 {
			if off := int(addr % PageSize); off >= size {
				t.Errorf("starts %d bytes past a huge page boundary, more than one value (%d)", off, size)
			}
		}
	}
	for _, n := range []int{0, 1, 1000, PageSize/2 - 1, PageSize / 2, PageSize, 3*PageSize + 7} {
		b := Slice[byte](n)
		check(t, cap(b), n, 1, uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))))
		b = append(b, make([]byte, n)...) // writable to the end
		if len(b) != n || (n > 0 && cap(b) != n) {
			t.Errorf("byte %d: len %d cap %d after filling", n, len(b), cap(b))
		}
	}
	size := int(unsafe.Sizeof(node{}))
	for _, n := range []int{10, PageSize / size, 3 * PageSize / size} {
		s := Slice[node](n)
		check(t, cap(s), n, size, uintptr(unsafe.Pointer(unsafe.SliceData(s[:cap(s)]))))
		for i := range n {
			s = append(s, node{name: "x", n: [9]byte{8: byte(i)}})
		}
		s[n-1].next = &s[0]
		if s[n-1].next.name != "x" || s[n-1].n[8] != byte(n-1) {
			t.Errorf("node %d: not kept", n)
		}
	}
}

// The kernel takes the advice: the mapping that holds a large slice is
// eligible for huge pages (smaps' THPeligible), where transparent huge
// pages are on for advised memory.
func TestSliceIsEligibleForHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !(bytes.Contains(mode, []byte("[madvise]")) || bytes.Contains(mode, []byte("[always]"))) {
		t.Skipf("transparent huge pages are not on for advised memory here (%q, %v)", mode, err)
	}
	s := Slice[byte](3 * PageSize / 2)
	addr := (uintptr(unsafe.Pointer(unsafe.SliceData(s[:1]))) + PageSize - 1) &^ (PageSize - 1)
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	in := false
	for line := range strings.Lines(string(smaps)) {
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "THPeligible:") {
			if strings.TrimSpace(strings.TrimPrefix(line, "THPeligible:")) != "1" {
				t.Errorf("the mapping at %#x: %s", addr, strings.TrimSpace(line))
			}
			runtime.KeepAlive(s)
			return
		}
	}
	t.Errorf("no THPeligible line for %#x in /proc/self/smaps", addr)
}

// A size past memory is refused as make refuses it, not by a slice
// expression that overflowed on the way.
func TestSliceTooLarge(t *testing.T) {
	defer func() {
		r := recover()
		if err, ok := r.(error); !ok || !strings.Contains(err.Error(), "makeslice") {
			t.Errorf("got %v, want make's error", r)
		}
	}()
	_ = Slice[uint64](1<<61 + 1<<19)
}
