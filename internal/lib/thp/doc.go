// Package thp allocates the few large buffers of a one-shot command on
// transparent huge pages.
//
// With the collector off (cli's one-shot commands), every page such a
// command touches is fresh memory, and each fresh 4 KiB page costs a page
// fault: ~3 us on the bench machine, where a 64-port snapshot audit took
// 2,300 of them. A buffer on a huge page boundary that the kernel is told
// it may back with huge pages (madvise(MADV_HUGEPAGE), honoured when
// /sys/kernel/mm/transparent_hugepage/enabled is "madvise" or "always")
// faults once per 2 MiB instead. docs/decisions.md, "Huge pages for the
// snapshot's large buffers", has the measurements.
//
// A shipped helper (internal/lib in internal/arch's table): anything may
// import it; it imports the standard library and x/sys only.
package thp
