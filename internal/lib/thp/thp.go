package thp

import (
	"math"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PageSize is the size of a transparent huge page with 4 KiB base pages
// (x86-64, arm64).
const PageSize = 2 << 20

// Slice returns an empty slice with room for n values of T. One of a
// megabyte or more lies on a huge page boundary, advised MADV_HUGEPAGE;
// it then costs up to PageSize of address space never touched, and up to
// PageSize of memory beyond what it holds. A smaller one is a plain make:
// zeroing a whole huge page costs more than faulting it in small pages.
// Where the kernel refuses the advice, the pages are plain ones.
func Slice[T any](n int) []T {
	size := int(unsafe.Sizeof(*new(T)))
	if size == 0 || n > (math.MaxInt-3*PageSize)/size || n*size < PageSize/2 {
		return make([]T, 0, n) // and a size past memory is make's to refuse
	}
	window := (n*size + PageSize - 1) &^ (PageSize - 1)
	s := make([]T, (window+PageSize)/size+2)
	// skip is the number of bytes to the first huge page boundary in s,
	// from the address's low bits (not converted back to a pointer);
	// the values start at the first whole one after it.
	base := unsafe.Pointer(unsafe.SliceData(s))
	skip := int(-uintptr(base) & (PageSize - 1))
	// The window's bytes, within s, for madvise.
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, skip)), window), unix.MADV_HUGEPAGE)
	first := (skip + size - 1) / size
	return s[first : first : first+n]
}
