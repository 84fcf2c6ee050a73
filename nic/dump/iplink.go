package dump

import (
	"strconv"
	"strings"
)

// Link is one interface of `ip [-d] [-s] link show`. Zero numbers were
// not printed (MinMTU/MaxMTU need -d).
type Link struct {
	Index          int
	Name           string
	Parent         string // "ens1f0np0" of "ens1f0np0.100@ens1f0np0"
	AdminUp        bool
	MTU            int
	OperState      string // "UP" → "up", as kernel.json writes it
	MAC            string
	MinMTU, MaxMTU int
	ParentDev      string // -d: "parentdev 0000:3b:00.0"
	VLANID         int    // -d on a VLAN: "vlan protocol 802.1Q id 100"
	At             Source
}

var (
	ipHeadRE  = lazyRegexp(`^(\d+): ([^:@\s]+)(?:@(\S+))?: <([^>]*)> (.*)$`)
	ipEtherRE = lazyRegexp(`^\s+link/ether ([0-9a-f:]{17})`)
)

func parseIPLink(ls []line) (*Block, []line, []Warning) {
	if !ipHeadRE().MatchString(ls[0].text) {
		return nil, ls, nil
	}
	b := &Block{Kind: KindIPLink, At: ls[0].at}
	i := 0
	for i < len(ls) {
		m := ipHeadRE().FindStringSubmatch(ls[i].text)
		if m == nil {
			break
		}
		l := Link{Name: m[2], Parent: m[3], At: ls[i].at}
		l.Index, _ = strconv.Atoi(m[1])
		for _, fl := range strings.Split(m[4], ",") {
			if fl == "UP" {
				l.AdminUp = true
			}
		}
		kv(strings.Fields(m[5]), func(k, v string) {
			switch k {
			case "mtu":
				l.MTU, _ = strconv.Atoi(v)
			case "state":
				l.OperState = strings.ToLower(v)
			}
		})
		i++
		for ; i < len(ls) && (strings.HasPrefix(ls[i].text, " ") || strings.HasPrefix(ls[i].text, "\t")); i++ {
			t := ls[i].text
			if m := ipEtherRE().FindStringSubmatch(t); m != nil {
				l.MAC = m[1]
			}
			f := strings.Fields(t)
			kv(f, func(k, v string) {
				switch k {
				case "minmtu":
					l.MinMTU, _ = strconv.Atoi(v)
				case "maxmtu":
					l.MaxMTU, _ = strconv.Atoi(v)
				case "parentdev":
					l.ParentDev = v
				case "id":
					if len(f) > 0 && f[0] == "vlan" {
						l.VLANID, _ = strconv.Atoi(v)
					}
				}
			})
		}
		b.Links = append(b.Links, l)
	}
	return b, ls[i:], nil
}

// kv calls fn for each word and the word after it.
func kv(f []string, fn func(k, v string)) {
	for j := 0; j+1 < len(f); j++ {
		fn(f[j], f[j+1])
	}
}
