package nic

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PFC storm prevention values of the pfc-prevention-tout tunable
// (PFC_STORM_PREVENTION_* in include/uapi/linux/ethtool.h).
const (
	PFCPreventionOff  uint16 = 0
	PFCPreventionAuto uint16 = 0xffff
)

// MLX5PFCPreventionAutoMs is what mlx5 stores, and later reports, when asked
// for PFCPreventionAuto (MLX5E_PFC_PREVEN_AUTO_TOUT_MSEC in en_ethtool.c): the
// driver turns auto into a 100 ms critical stall watermark.
const MLX5PFCPreventionAutoMs uint16 = 100

// struct ethtool_tunable (include/uapi/linux/ethtool.h), checked with gcc on
// x86_64: {u32 cmd; u32 id; u32 type_id; u32 len; void *data[];}, sizeof 16,
// data at offset 16. For ETHTOOL_PFC_PREVENTION_TOUT the kernel requires
// type_id ETHTOOL_TUNABLE_U16 and len 2 (ethtool_tunable_valid, else EINVAL),
// and reads or writes the u16 right after the header. On GTUNABLE the kernel
// writes only the value, not the header.
const (
	tunableHeaderLen = 16
	tunableU16BufLen = tunableHeaderLen + 2
)

// encodeTunableU16 builds the ethtool_tunable buffer for a u16 tunable: cmd
// is unix.ETHTOOL_GTUNABLE (value ignored) or unix.ETHTOOL_STUNABLE. Fields
// are host-endian, as the kernel reads them.
func encodeTunableU16(cmd, id uint32, value uint16) []byte {
	b := make([]byte, tunableU16BufLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], cmd)
	ne.PutUint32(b[4:], id)
	ne.PutUint32(b[8:], unix.ETHTOOL_TUNABLE_U16)
	ne.PutUint32(b[12:], 2)
	ne.PutUint16(b[16:], value)
	return b
}

// decodeTunableU16 reads the value the kernel wrote after a GTUNABLE.
func decodeTunableU16(b []byte) (uint16, error) {
	if len(b) != tunableU16BufLen {
		return 0, fmt.Errorf("ethtool_tunable u16 buffer is %d bytes, want %d", len(b), tunableU16BufLen)
	}
	ne := binary.NativeEndian
	if t := ne.Uint32(b[8:]); t != unix.ETHTOOL_TUNABLE_U16 {
		return 0, fmt.Errorf("ethtool_tunable type_id %d, want %d (u16)", t, unix.ETHTOOL_TUNABLE_U16)
	}
	if n := ne.Uint32(b[12:]); n != 2 {
		return 0, fmt.Errorf("ethtool_tunable len %d, want 2", n)
	}
	return ne.Uint16(b[16:]), nil
}

// PFCPreventionTimeout reads the pfc-prevention-tout tunable
// (ETHTOOL_GTUNABLE, id ETHTOOL_PFC_PREVENTION_TOUT) in milliseconds. A
// driver without tunables (veth) or without the firmware capability (mlx5
// lacking PCAM pfcc_mask or the stall_detect debug cap) answers EOPNOTSUPP.
func (l *Live) PFCPreventionTimeout(ifname string) (uint16, error) {
	const op = "ethtool get tunable pfc-prevention-tout"
	if err := checkIfreqName(ifname); err != nil {
		return 0, opErr(ifname, op, err)
	}
	b := encodeTunableU16(unix.ETHTOOL_GTUNABLE, unix.ETHTOOL_PFC_PREVENTION_TOUT, 0)
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&b[0])); err != nil {
		return 0, opErr(ifname, op, err)
	}
	v, err := decodeTunableU16(b)
	if err != nil {
		return 0, opErr(ifname, op, err)
	}
	return v, nil
}

// SetPFCPreventionTimeout writes the pfc-prevention-tout tunable
// (ETHTOOL_STUNABLE). The range check is the driver's: mlx5 accepts 0
// (off), 0xffff (auto) and 80..8000, else EINVAL. mlx5 reads auto back as
// 100, which the caller's read-back accepts as auto.
func (l *Live) SetPFCPreventionTimeout(ifname string, ms uint16) error {
	op := "ethtool set tunable pfc-prevention-tout " + pfcPreventionString(ms)
	if err := checkIfreqName(ifname); err != nil {
		return opErr(ifname, op, err)
	}
	b := encodeTunableU16(unix.ETHTOOL_STUNABLE, unix.ETHTOOL_PFC_PREVENTION_TOUT, ms)
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&b[0])); err != nil {
		return opErr(ifname, op, err)
	}
	return nil
}

func pfcPreventionString(ms uint16) string {
	switch ms {
	case PFCPreventionOff:
		return "0 (off)"
	case PFCPreventionAuto:
		return "0xffff (auto)"
	}
	return strconv.Itoa(int(ms)) + " ms"
}

// ifreqData is struct ifreq with the ifr_data member of its union: the name,
// then a pointer to the ethtool command buffer. The trailing pad makes it at
// least sizeof(struct ifreq) (40 on 64-bit, 32 on 32-bit), which the kernel
// copies in whole.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24]byte
}

// ethtoolIoctl runs SIOCETHTOOL on fd (whose network namespace selects the
// netdev) with data pointing at an ethtool command buffer, and returns the
// errno as a syscall.Errno. data must point to memory the GC does not move:
// the heap, or an mmap'd region.
func ethtoolIoctl(fd int, ifname string, data unsafe.Pointer) error {
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = data
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return errno
	}
	return nil
}
