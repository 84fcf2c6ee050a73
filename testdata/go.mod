// This go.mod keeps the fixture trees out of rocectl's module zip: sysfs
// paths contain ":" (pci0000:3a, 0000:3b:00.0), which module zips reject.
module github.com/rocectl/rocectl/testdata
