package dump

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// GID is one show_gids row. Netdev is "" for an IB port (the DEV column
// is empty there); IPv4 is "" for non-IPv4 GIDs.
type GID struct {
	Device string
	Port   int
	Index  int
	GID    netip.Addr
	IPv4   string
	RoCEv2 bool
	Netdev string
	At     Source
}

func parseShowGids(ls []line) (*Block, []line, []Warning) {
	f := strings.Fields(ls[0].text)
	if len(f) < 4 || f[0] != "DEV" || f[1] != "PORT" || f[2] != "INDEX" || f[3] != "GID" {
		return nil, ls, nil
	}
	b := &Block{Kind: KindShowGids, At: ls[0].at}
	var warns []Warning
	i := 1
	for ; i < len(ls); i++ {
		t := strings.TrimSpace(ls[i].text)
		f := strings.Fields(t)
		switch {
		case t == "", len(f) > 0 && f[0] == "---":
			continue
		case strings.HasPrefix(t, "n_gids_found"):
			i++
			return b, ls[i:], warns
		}
		if len(f) < 5 {
			break
		}
		port, err1 := strconv.Atoi(f[1])
		idx, err2 := strconv.Atoi(f[2])
		addr, err3 := netip.ParseAddr(f[3])
		if err1 != nil || err2 != nil || err3 != nil {
			break
		}
		g := GID{Device: f[0], Port: port, Index: idx, GID: addr, At: ls[i].at}
		ver := false
		for _, x := range f[4:] {
			switch {
			case x == "v1" || x == "v2":
				g.RoCEv2, ver = x == "v2", true
			case strings.Count(x, ".") == 3:
				if _, err := netip.ParseAddr(x); err == nil {
					g.IPv4 = x
					continue
				}
				g.Netdev = x
			default:
				g.Netdev = x
			}
		}
		if !ver {
			warns = append(warns, Warning{ls[i].at, fmt.Sprintf("GID row without a v1/v2 column: not used: %q", clip(t))})
			continue
		}
		b.GIDs = append(b.GIDs, g)
	}
	return b, ls[i:], warns
}
