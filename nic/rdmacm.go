package nic

import (
	"fmt"
	"strconv"
)

// rdma_cm configfs (drivers/infiniband/core/cma_configfs.c): the default RoCE
// mode and TOS of rdma_cm connections that do not set their own. The device
// directory must be created by the user; values stay in the kernel after it
// is removed again, which is what cma_roce_tos does: mkdir, write, rmdir.
const rdmaCMDir = "/sys/kernel/config/rdma_cm"

// RoCE mode strings as configfs spells them.
const (
	RoCEModeV1 = "IB/RoCE v1"
	RoCEModeV2 = "RoCE v2"
)

// withRDMACM runs fn with ports/<port> of the device's configfs directory,
// creating the directory first if needed and removing it afterwards when it
// created it.
func withRDMACM(fs FS, dev string, port int, fn func(dir string) error) error {
	if !fs.Exists(rdmaCMDir) {
		return Unsupportedf("rdma_cm configfs is not available (mount configfs at /sys/kernel/config and load rdma_cm)")
	}
	devDir := rdmaCMDir + "/" + dev
	created := false
	if !fs.Exists(devDir) {
		if err := fs.Mkdir(devDir); err != nil {
			return fmt.Errorf("mkdir %s: %w", devDir, err)
		}
		created = true
	}
	err := fn(fmt.Sprintf("%s/ports/%d", devDir, port))
	if created {
		if rerr := fs.Rmdir(devDir); rerr != nil && err == nil {
			err = fmt.Errorf("rmdir %s: %w", devDir, rerr)
		}
	}
	return err
}

// RoCEDefaults reads default_roce_mode and default_roce_tos.
func RoCEDefaults(fs FS, dev string, port int) (mode string, tos int, err error) {
	err = withRDMACM(fs, dev, port, func(dir string) error {
		m, err := fs.ReadTrimmed(dir + "/default_roce_mode")
		if err != nil {
			return err
		}
		t, err := fs.ReadTrimmed(dir + "/default_roce_tos")
		if err != nil {
			return err
		}
		n, err := strconv.ParseUint(t, 0, 8)
		if err != nil {
			return fmt.Errorf("default_roce_tos holds %q", t)
		}
		mode, tos = m, int(n)
		return nil
	})
	return mode, tos, err
}

// SetRoCEMode writes default_roce_mode ("IB/RoCE v1" or "RoCE v2"); the
// caller reads it back (RoCEDefaults).
func SetRoCEMode(fs FS, dev string, port int, mode string) error {
	return withRDMACM(fs, dev, port, func(dir string) error {
		return fs.WriteString(dir+"/default_roce_mode", mode)
	})
}

// SetRoCETOS writes default_roce_tos; the caller reads it back.
func SetRoCETOS(fs FS, dev string, port int, tos int) error {
	return withRDMACM(fs, dev, port, func(dir string) error {
		return fs.WriteString(dir+"/default_roce_tos", strconv.Itoa(tos))
	})
}
