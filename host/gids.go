package host

import (
	"github.com/rocectl/rocectl/internal/lib/parallel"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/port"
)

// ReadGIDTables fills each port's GIDs with its whole GID table, for what
// checks NCCL's own selection (IB_GID_INDEX = "select"): a table read is
// never nil, so that "read, no entries" (an empty slice) differs from
// "not read" (nil). A port without an RDMA device is left alone (its
// table is unknown: nccl says so); a table that cannot be listed sets
// GIDUnknown.
func (h *Host) ReadGIDTables(ports []port.Port) {
	parallel.Each(len(ports), func(i int) {
		p := &ports[i]
		if p.RDMADevice == "" {
			return
		}
		gids, err := nic.ReadGIDs(h.FS, p.RDMADevice, p.PortNum)
		if err != nil {
			p.GIDUnknown = err.Error()
			return
		}
		if gids == nil {
			gids = []port.GID{}
		}
		p.GIDs = gids
	})
}
