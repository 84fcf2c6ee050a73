package verify

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path"
	"strconv"
	"time"

	"github.com/rocectl/rocectl/nic"
)

// RDMA port hw_counters around a verbs run (reference §A4.2):
// /sys/class/infiniband/<dev>/ports/<p>/hw_counters/<name>, one decimal
// value per file. The directory also holds "lifespan", the cache lifetime
// in ms of those values, which is not a counter.

const hwCountersLifespan = "lifespan"

// readHWCounters reads every counter of one port. A missing directory is
// "no data" (nil map, no error): not every driver has hw_counters. A file
// that cannot be read or parsed is skipped and logged, so that one odd
// counter (some drivers answer EOPNOTSUPP for counters the firmware lacks)
// does not hide the others.
func readHWCounters(fs nic.FS, dev string, port int, log *slog.Logger) (map[string]uint64, error) {
	dir := fmt.Sprintf(hwCountersPath, dev, port)
	names, err := fs.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		log.Debug("no hw_counters", "dir", dir)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hw_counters of %s/%d: %w", dev, port, err)
	}
	out := make(map[string]uint64, len(names))
	for _, n := range names {
		if n == hwCountersLifespan {
			continue
		}
		s, err := fs.ReadTrimmed(path.Join(dir, n))
		if err != nil {
			log.Debug("hw_counter unreadable", "counter", n, "err", err)
			continue
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			log.Debug("hw_counter not a number", "counter", n, "value", s)
			continue
		}
		out[n] = v
	}
	return out, nil
}

// hwCountersSettle is how long to wait after traffic before the second
// read: the RDMA core serves hw_counters from a cache that is refreshed at
// most every "lifespan" ms (default 10 ms; rxe shows 12 with HZ=250), so a
// read right after the last completion can return the value from before
// the run. Capped at one second in case someone set a huge lifespan.
func hwCountersSettle(fs nic.FS, dev string, port int) time.Duration {
	s, err := fs.ReadTrimmed(path.Join(fmt.Sprintf(hwCountersPath, dev, port), hwCountersLifespan))
	if err != nil {
		return 0
	}
	ms, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0
	}
	return min(time.Duration(ms+1)*time.Millisecond, time.Second)
}

// hwCounterDeltas returns after-before for every counter present in both
// reads whose value changed.
//
// Wraps: mlx5 keeps its q counters (out_of_sequence, packet_seq_err,
// local_ack_timeout_err, ...) in 32 bits in firmware and the driver
// widens them to u64 without carrying, so they wrap at 2^32. When a counter
// went down and both values fit in 32 bits, the delta is taken modulo 2^32
// (one wrap during the run; a run would need 4 G events to wrap twice).
// A counter that went down from above 2^32 cannot have wrapped that way:
// it was reset (driver reload, device reset), and the delta is what it
// counted since the reset, i.e. its new value.
func hwCounterDeltas(before, after map[string]uint64) map[string]int64 {
	if before == nil || after == nil {
		return nil
	}
	out := make(map[string]int64)
	for name, a := range after {
		b, ok := before[name]
		if !ok || a == b {
			continue
		}
		var d uint64
		switch {
		case a > b:
			d = a - b
		case b <= math.MaxUint32:
			d = (a - b) & math.MaxUint32
		default:
			d = a
		}
		out[name] = int64(min(d, math.MaxInt64))
	}
	return out
}
