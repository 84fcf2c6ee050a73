package dump

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/rocectl/rocectl/nic"
)

// A claim is one thing a dump says about the host it came from: the host
// name of its prompt, a netdev's MAC or PCI function, the netdev and the
// default GID of an RDMA port, a device's node GUID; or, for the dumps
// whose later copy would silently replace an earlier one (mlnx_qos,
// ethtool -a/-i, dcb of one netdev), their whole content.
type claim struct {
	key, value string
	at         Source
}

// Conflict is two dumps that say different things of one key: they are
// not of one host (or not of one moment).
type Conflict struct {
	Key  string // "host name", "ens1f0 MAC", "mlx5_0/1 default GID", "eth4 mlnx_qos output"
	A, B string // the two values (for content, "output at FILE:LINE")
	AAt  Source
	BAt  Source
}

func (c Conflict) String() string {
	return fmt.Sprintf("%s: %s (%s) but %s (%s)", c.Key, c.A, c.AAt, c.B, c.BAt)
}

// ErrConflict marks dumps that do not describe one host: an
// *IdentityError.
var ErrConflict = errors.New("the dumps are not of one host")

// IdentityError lists every conflict between the dumps.
type IdentityError struct{ Conflicts []Conflict }

func (e *IdentityError) Error() string {
	files := map[string]bool{}
	var lines []string
	for _, c := range e.Conflicts {
		files[c.AAt.File], files[c.BAt.File] = true, true
		lines = append(lines, "  "+c.String())
	}
	return fmt.Sprintf("the dumps are not of one host: %s disagree:\n%s\n(import the dumps of each host, and of one moment, into a snapshot of their own)",
		strings.Join(slices.Sorted(maps.Keys(files)), ", "), strings.Join(lines, "\n"))
}

// Is makes an IdentityError match ErrConflict.
func (e *IdentityError) Is(target error) bool { return target == ErrConflict }

// replacing are the kinds whose second block for one netdev replaces the
// first's data (two ethtool -S dumps are two samples, and ip link and
// show_gids are checked by what they identify).
var replacing = map[Kind]bool{KindMlnxQos: true, KindEthtoolA: true, KindEthtoolI: true, KindDCBPFC: true, KindDCBApp: true}

// CheckIdentity reads what each dump says of the host it came from and
// returns an *IdentityError listing every pair of files that disagree:
// prompts naming different hosts, one netdev with two MACs or PCI
// functions, one RDMA port with two netdevs or default GIDs, one device
// with two node GUIDs, or two different outputs of a command whose data
// would replace the other's (two mlnx_qos dumps of one --netdev: which
// one the snapshot held would depend on the order of the arguments).
// Blocks that name no interface are taken as netdev's (--netdev), as
// Build takes them.
//
// anonymous lists the files that carry no identity at all (an mlnx_qos
// or ethtool -S dump without a prompt naming its host): nothing can show
// they are not of another host, so the import says so, but they are not
// a conflict.
func CheckIdentity(blocks []Block, netdev string) (anonymous []string, err error) {
	var claims []claim
	add := func(key, value string, at Source) {
		if value != "" {
			claims = append(claims, claim{key, value, at})
		}
	}
	outputs := map[string]map[string]claim{} // key → file → its last output
	var outputKeys []string
	identified := map[string]bool{}
	var files []string
	for _, b := range blocks {
		if !slices.Contains(files, b.At.File) {
			files = append(files, b.At.File)
		}
		n := len(claims)
		add("host name", b.Host, b.At)
		nd := b.Netdev
		if nd == "" {
			nd = netdev
		}
		switch b.Kind {
		case KindIPLink:
			for _, l := range b.Links {
				add(l.Name+" MAC", l.MAC, l.At)
				add(l.Name+" PCI function", l.ParentDev, l.At)
			}
		case KindEthtoolI:
			if b.Driver != nil && nd != "" && nic.IsPCIAddress(b.Driver.BusInfo) {
				add(nd+" PCI function", b.Driver.BusInfo, b.Driver.At)
			}
		case KindShowGids:
			for _, g := range b.GIDs {
				if g.Index == 0 {
					port := fmt.Sprintf("%s/%d", g.Device, g.Port)
					add(port+" default GID", g.GID.String(), g.At)
					add(port+" netdev", g.Netdev, g.At)
				}
			}
		case KindRdmaLink:
			for _, p := range b.RDMALinks {
				add(fmt.Sprintf("%s/%d netdev", p.Device, p.Port), p.Netdev, p.At)
			}
		case KindIbvDevinfo:
			for _, d := range b.Devices {
				add(d.Name+" node GUID", d.NodeGUID, d.At)
				for _, p := range d.Ports {
					for _, g := range p.GIDs {
						if a, err := netip.ParseAddr(g.GID); g.Index == 0 && err == nil {
							add(fmt.Sprintf("%s/%d default GID", d.Name, p.Port), a.String(), g.At)
						}
					}
				}
			}
		}
		if len(claims) > n {
			identified[b.At.File] = true
		}
		if replacing[b.Kind] && nd != "" {
			// Within one file a later output is the later state (a
			// session that set, then showed); across files, two that
			// differ are a conflict.
			key := fmt.Sprintf("%s %s output", nd, b.Kind)
			if outputs[key] == nil {
				outputs[key] = map[string]claim{}
				outputKeys = append(outputKeys, key)
			}
			outputs[key][b.At.File] = claim{key, content(b), b.At}
		}
	}
	for _, key := range outputKeys {
		for _, f := range files {
			if c, ok := outputs[key][f]; ok {
				claims = append(claims, c)
			}
		}
	}
	for _, f := range files {
		if !identified[f] {
			anonymous = append(anonymous, f)
		}
	}
	// The first value of each key, and every other value that differs
	// from it in another place.
	first := map[string]claim{}
	var conflicts []Conflict
	seen := map[[2]string]bool{}
	for _, c := range claims {
		f, ok := first[c.key]
		if !ok {
			first[c.key] = c
			continue
		}
		if f.value == c.value || seen[[2]string{c.key, c.value}] {
			continue
		}
		seen[[2]string{c.key, c.value}] = true
		a, b := f.value, c.value
		if strings.HasSuffix(c.key, " output") {
			a, b = "one", "a different one"
		}
		conflicts = append(conflicts, Conflict{Key: c.key, A: a, AAt: f.at, B: b, BAt: c.at})
	}
	if conflicts != nil {
		return anonymous, &IdentityError{Conflicts: conflicts}
	}
	return anonymous, nil
}

// content is a block's data without where it was: two dumps of the same
// output compare equal, wherever they are.
func content(b Block) string {
	b.At, b.Host, b.Netdev = Source{}, "", ""
	raw, err := json.Marshal(b)
	if err != nil {
		return err.Error()
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err.Error()
	}
	out, _ := json.Marshal(dropSources(v))
	return string(out)
}

// dropSources removes every Source (an object of File and Line) from v.
func dropSources(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if _, f := x["File"]; f && len(x) == 2 {
			if _, l := x["Line"]; l {
				return nil
			}
		}
		for k, e := range x {
			if d := dropSources(e); d == nil && e != nil {
				delete(x, k)
			} else {
				x[k] = d
			}
		}
	case []any:
		for i := range x {
			x[i] = dropSources(x[i])
		}
	}
	return v
}
