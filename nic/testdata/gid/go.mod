// The fixture trees here copy sysfs paths, which contain ':' (PCI
// addresses, pci0000:00). Go module zips refuse such file names, so a
// module zip of rocectl (go install ...@version, the module proxy) would
// fail with them inside. This go.mod makes the directory a module of its
// own, which the rocectl module zip leaves out; tests read the trees from
// the checkout.
module rocectl.invalid/nic/testdata/gid
