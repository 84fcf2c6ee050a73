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

// withRDMACM runs fn with ports/<port> of the device's configfs directory.
// Only when fn finds it missing (nothing keeps it on a host where rdma_cm
// is configured the usual way) is the device directory created, fn run
// again, and the directory removed: the common case costs no extra stat.
func withRDMACM(fs FS, dev string, port int, fn func(dir string) error) error {
	devDir := rdmaCMDir + "/" + dev
	dir := fmt.Sprintf("%s/ports/%d", devDir, port)
	err := fn(dir)
	if !isNotExist(err) {
		return err
	}
	if !fs.Exists(rdmaCMDir) {
		return Unsupportedf("rdma_cm configfs is not available (mount configfs at /sys/kernel/config and load rdma_cm)")
	}
	if fs.Exists(devDir) {
		return err // the device is there, the port or attribute is not
	}
	if err := fs.Mkdir(devDir); err != nil {
		return fmt.Errorf("mkdir %s: %w", devDir, err)
	}
	err = fn(dir)
	if rerr := fs.Rmdir(devDir); rerr != nil && err == nil {
		err = fmt.Errorf("rmdir %s: %w", devDir, rerr)
	}
	return err
}

// RoCEMode reads default_roce_mode.
func RoCEMode(fs FS, dev string, port int) (mode string, err error) {
	err = withRDMACM(fs, dev, port, func(dir string) error {
		mode, err = fs.ReadTrimmed(dir + "/default_roce_mode")
		return err
	})
	return mode, err
}

// RoCETOS reads default_roce_tos.
func RoCETOS(fs FS, dev string, port int) (tos int, err error) {
	err = withRDMACM(fs, dev, port, func(dir string) error {
		t, err := fs.ReadTrimmed(dir + "/default_roce_tos")
		if err != nil {
			return err
		}
		n, err := strconv.ParseUint(t, 0, 8)
		if err != nil {
			return fmt.Errorf("default_roce_tos holds %q", t)
		}
		tos = int(n)
		return nil
	})
	return tos, err
}

// RoCEDefaults reads default_roce_mode and default_roce_tos.
func RoCEDefaults(fs FS, dev string, port int) (mode string, tos int, err error) {
	if mode, err = RoCEMode(fs, dev, port); err != nil {
		return "", 0, err
	}
	tos, err = RoCETOS(fs, dev, port)
	return mode, tos, err
}

// SetRoCEMode writes default_roce_mode ("IB/RoCE v1" or "RoCE v2"); the
// caller reads it back (RoCEMode).
func SetRoCEMode(fs FS, dev string, port int, mode string) error {
	return withRDMACM(fs, dev, port, func(dir string) error {
		return fs.WriteString(dir+"/default_roce_mode", mode)
	})
}

// SetRoCETOS writes default_roce_tos; the caller reads it back (RoCETOS).
func SetRoCETOS(fs FS, dev string, port int, tos int) error {
	return withRDMACM(fs, dev, port, func(dir string) error {
		return fs.WriteString(dir+"/default_roce_tos", strconv.Itoa(tos))
	})
}
