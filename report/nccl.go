package report

import (
	"bufio"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/doc"
)

// The two NCCL sections of the fleet view (issue 37 item 4):
//
//   - "NCCL GID index": per profile (the role a host plays), what each
//     host's NCCL_IB_GID_INDEX resolves to, from its newest nccl-env
//     document. NCCL's RoCE failures are most often a GID index pinned
//     for the whole fleet (a container image, a shared nccl.conf) on hosts
//     whose RoCE v2 GID sits elsewhere: the hosts of one role that
//     disagree are the ones such a pin breaks.
//   - "NCCL against the NIC classes": the hosts whose newest audit or
//     apply found NCCL's classes (NCCL_IB_TC, NCCL_IB_FIFO_TC,
//     NCCL_IB_SL, managed or in an unmanaged /etc/nccl.conf) disagreeing
//     with the profile's QoS intent (qos_chain).
//
// Each host's share is a few strings in its hostDoc; the sections are
// built at the end and name a bounded number of hosts.

// gidWhy is the one line that says why hosts that differ matter.
const gidWhy = "A fleet-wide NCCL_IB_GID_INDEX (pinned in a container image or a shared nccl.conf) breaks on the hosts that differ from their profile's most common value: their RoCE v2 GID is at another index, or there is none NCCL can use. " +
	`With NCCL ≥ 2.21, IB_GID_INDEX = "select" lets NCCL pick the GID on every host by address family and range.`

// gidValue is what an nccl-env document's NCCL_IB_GID_INDEX resolves to,
// and how it was decided; "", "" when the document sets none (a profile
// without it, no matched port, a profile that did not load).
func gidValue(n *doc.NCCLEnv) (value, mode string) {
	if c := n.GIDIndex; c != nil {
		switch c.Mode {
		case "pinned":
			if c.Index != nil {
				return strconv.Itoa(*c.Index), c.Mode
			}
			return n.Variables["NCCL_IB_GID_INDEX"], c.Mode
		case "dynamic":
			return "-1", c.Mode
		case "select":
			return "select (-1)", c.Mode
		}
		return c.Mode, c.Mode // refused, unknown, or a mode newer than this reader
	}
	if v, ok := n.Variables["NCCL_IB_GID_INDEX"]; ok {
		return v, "profile" // the profile states the index itself
	}
	return "", ""
}

// aboutNCCL: a QoS chain problem about NCCL's classes, on the host: the
// keys policy.HostViews and cli's confFacts give them (a setting key
// "host.nccl.NCCL_IB_TC", a file and variable "/etc/nccl.conf
// NCCL_IB_SL", a profile key "nccl.IB_SL").
func aboutNCCL(c doc.ChainProblem) bool {
	return c.Side == "host" && (strings.Contains(c.Key, "NCCL_") || strings.HasPrefix(c.Key, "nccl."))
}

// NCCLGIDView is the "NCCL GID index" section: per profile, the values
// its hosts' NCCL_IB_GID_INDEX resolves to.
type NCCLGIDView struct {
	// Hosts counts the hosts whose newest nccl-env document sets the
	// index; Differ those whose value is not their profile's most common.
	Hosts    int           `json:"hosts"`
	Differ   int           `json:"differ"`
	Profiles []*GIDProfile `json:"profiles"`
	// Why says what a differing host risks.
	Why string `json:"why"`
}

// GIDProfile is one profile's hosts, grouped by value.
type GIDProfile struct {
	Profile string `json:"profile"`
	Hosts   int    `json:"hosts"`
	// Common is the most common value (Values[0]).
	Common string `json:"common"`
	// Values: most hosts first, then by value.
	Values []*GIDValue `json:"values"`
}

// GIDValue is the hosts of one profile with one value.
type GIDValue struct {
	Value string `json:"value"`
	Mode  string `json:"mode"`
	Hosts int    `json:"hosts"`
	// Names are the hosts, by name, the first maxNamed; only for the
	// values other than the most common one.
	Names []string `json:"names,omitempty"`
}

// NCCLChainView is the "NCCL against the NIC classes" section.
type NCCLChainView struct {
	// Hosts counts the hosts whose newest audit/apply document has QoS
	// chain problems about NCCL; Problems counts the problems.
	Hosts    int `json:"hosts"`
	Problems int `json:"problems"`
	// Listed are the first maxNamed of those hosts, by name.
	Listed []NCCLChainHost `json:"listed"`
}

// NCCLChainHost is one host's NCCL problems: how many, and the first.
type NCCLChainHost struct {
	Host     string `json:"host"`
	Profile  string `json:"profile,omitempty"`
	Problems int    `json:"problems"`
	First    string `json:"first"`
}

// ncclBuilder gathers the sections as finish walks the hosts by name.
type ncclBuilder struct {
	gid   map[string]map[[2]string]*GIDValue // profile → (value, mode)
	chain NCCLChainView
}

func (b *ncclBuilder) add(host string, a *hostAcc) {
	if n := a.nccl; n != nil && n.gid != "" {
		if b.gid == nil {
			b.gid = map[string]map[[2]string]*GIDValue{}
		}
		vals := b.gid[n.profile]
		if vals == nil {
			vals = map[[2]string]*GIDValue{}
			b.gid[n.profile] = vals
		}
		k := [2]string{n.gid, n.gidMode}
		v := vals[k]
		if v == nil {
			v = &GIDValue{Value: n.gid, Mode: n.gidMode}
			vals[k] = v
		}
		v.Hosts++
		if len(v.Names) < maxNamed {
			v.Names = append(v.Names, host)
		}
	}
	if p := a.plan; p != nil && p.ncclChain > 0 {
		b.chain.Hosts++
		b.chain.Problems += p.ncclChain
		if len(b.chain.Listed) < maxNamed {
			b.chain.Listed = append(b.chain.Listed, NCCLChainHost{Host: host, Profile: p.profile, Problems: p.ncclChain, First: p.ncclFirst})
		}
	}
}

// finish puts the sections on fl; each is absent when no document
// spoke of it.
func (b *ncclBuilder) finish(fl *Fleet) {
	if b.chain.Hosts > 0 {
		c := b.chain
		fl.NCCLChain = &c
	}
	if len(b.gid) == 0 {
		return
	}
	g := &NCCLGIDView{Profiles: []*GIDProfile{}, Why: gidWhy}
	for prof, vals := range b.gid {
		p := &GIDProfile{Profile: prof}
		for _, v := range vals {
			p.Hosts += v.Hosts
			p.Values = append(p.Values, v)
		}
		slices.SortFunc(p.Values, func(a, b *GIDValue) int {
			if c := cmp.Compare(b.Hosts, a.Hosts); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Value, b.Value); c != 0 {
				return c
			}
			return cmp.Compare(a.Mode, b.Mode)
		})
		p.Common = p.Values[0].Value
		p.Values[0].Names = nil
		g.Hosts += p.Hosts
		g.Differ += p.Hosts - p.Values[0].Hosts
		g.Profiles = append(g.Profiles, p)
	}
	slices.SortFunc(g.Profiles, func(a, b *GIDProfile) int { return cmp.Compare(a.Profile, b.Profile) })
	fl.NCCLGID = g
}

// text is how a value reads: "3 (pinned)", "refused".
func (v *GIDValue) text() string {
	if v.Mode == "" || v.Mode == v.Value || v.Mode == "select" {
		return v.Value
	}
	return v.Value + " (" + v.Mode + ")"
}

// differ is the hosts of a value other than the most common, named and
// counted: "a b … and 3 more".
func (v *GIDValue) differ() string {
	n := min(len(v.Names), maxListed)
	s := listHosts(v.Names[:n])
	if more := v.Hosts - n; more > 0 {
		s += fmt.Sprintf(" … and %d more", more)
	}
	return s
}

func (g *NCCLGIDView) headline() string {
	s := fmt.Sprintf("%s of %s", plural(g.Hosts, "host", "hosts"), plural(len(g.Profiles), "profile", "profiles"))
	if g.Differ == 0 {
		return s + ", each profile's hosts agree"
	}
	return s + fmt.Sprintf(", %d differ from their profile's most common value", g.Differ)
}

// agree is a profile's one line when all its hosts agree, "" otherwise.
func (p *GIDProfile) agree() string {
	if len(p.Values) != 1 {
		return ""
	}
	return fmt.Sprintf("%s, all %s", plural(p.Hosts, "host", "hosts"), p.Values[0].text())
}

func (p *GIDProfile) most() string {
	at := " at"
	if v := p.Values[0]; v.Mode == "refused" || v.Mode == "unknown" {
		at = "" // "2 refused"
	}
	return fmt.Sprintf("%s; %d%s %s", plural(p.Hosts, "host", "hosts"), p.Values[0].Hosts, at, p.Values[0].text())
}

func (c *NCCLChainView) headline() string {
	return fmt.Sprintf("%s, %s", plural(c.Hosts, "host", "hosts"), plural(c.Problems, "problem", "problems"))
}

func (c *NCCLChainView) more() int { return c.Hosts - len(c.Listed) }

// renderNCCLText is both sections in the text report.
func renderNCCLText(w *bufio.Writer, f *Fleet) {
	if g := f.NCCLGID; g != nil {
		fmt.Fprintf(w, "\nNCCL GID index (%s):\n", g.headline())
		if g.Differ > 0 {
			fmt.Fprintf(w, "  %s\n", g.Why)
		}
		for _, p := range g.Profiles {
			if a := p.agree(); a != "" {
				fmt.Fprintf(w, "  %s: %s\n", printable(p.Profile), a)
				continue
			}
			fmt.Fprintf(w, "  %s: %s\n", printable(p.Profile), p.most())
			for _, v := range p.Values[1:] {
				fmt.Fprintf(w, "      %s on %s: %s\n", printable(v.text()), plural(v.Hosts, "host", "hosts"), v.differ())
			}
		}
	}
	if c := f.NCCLChain; c != nil {
		fmt.Fprintf(w, "\nNCCL against the NIC classes (%s):\n", c.headline())
		for _, h := range c.Listed {
			fmt.Fprintf(w, "  %s: %s\n", printable(h.Host), printable(h.first()))
		}
		if m := c.more(); m > 0 {
			fmt.Fprintf(w, "  … and %d more\n", m)
		}
	}
}

// first is the host's first problem, and how many more it has.
func (h NCCLChainHost) first() string {
	if h.Problems > 1 {
		return fmt.Sprintf("%s (and %d more)", h.First, h.Problems-1)
	}
	return h.First
}

func renderNCCLMarkdown(w *bufio.Writer, f *Fleet) {
	if g := f.NCCLGID; g != nil {
		fmt.Fprintf(w, "\n## NCCL GID index\n\n%s.", mdEscape(g.headline()))
		if g.Differ > 0 {
			fmt.Fprintf(w, " %s", mdEscape(g.Why))
		}
		fmt.Fprint(w, "\n\n")
		for _, p := range g.Profiles {
			if a := p.agree(); a != "" {
				fmt.Fprintf(w, "- %s: %s\n", mdEscape(p.Profile), mdEscape(a))
				continue
			}
			fmt.Fprintf(w, "- %s: %s\n", mdEscape(p.Profile), mdEscape(p.most()))
			for _, v := range p.Values[1:] {
				fmt.Fprintf(w, "  - %s on %s: %s\n", mdEscape(v.text()), plural(v.Hosts, "host", "hosts"), mdEscape(v.differ()))
			}
		}
	}
	if c := f.NCCLChain; c != nil {
		fmt.Fprintf(w, "\n## NCCL against the NIC classes\n\n%s whose NCCL classes disagree with the profile's QoS intent (%s); the first problem of each.\n\n", plural(c.Hosts, "host", "hosts"), plural(c.Problems, "problem", "problems"))
		for _, h := range c.Listed {
			fmt.Fprintf(w, "- %s: %s\n", mdEscape(h.Host), mdEscape(h.first()))
		}
		if m := c.more(); m > 0 {
			fmt.Fprintf(w, "- … and %d more\n", m)
		}
	}
}

func renderNCCLHTML(w *bufio.Writer, f *Fleet) {
	if g := f.NCCLGID; g != nil {
		fmt.Fprintf(w, "<h2>NCCL GID index</h2>\n<p>%s.", esc(g.headline()))
		if g.Differ > 0 {
			fmt.Fprintf(w, " %s", esc(g.Why))
		}
		fmt.Fprint(w, "</p>\n<ul id=\"nccl-gid\">")
		for _, p := range g.Profiles {
			if a := p.agree(); a != "" {
				fmt.Fprintf(w, "<li><code>%s</code>: %s</li>", esc(p.Profile), esc(a))
				continue
			}
			fmt.Fprintf(w, "<li><code>%s</code>: %s<ul>", esc(p.Profile), esc(p.most()))
			for _, v := range p.Values[1:] {
				fmt.Fprintf(w, "<li>%s on %s: %s</li>", esc(v.text()), plural(v.Hosts, "host", "hosts"), esc(v.differ()))
			}
			fmt.Fprint(w, "</ul></li>")
		}
		fmt.Fprintln(w, "</ul>")
	}
	if c := f.NCCLChain; c != nil {
		fmt.Fprintf(w, "<h2>NCCL against the NIC classes</h2>\n<p>%s whose NCCL classes disagree with the profile&#39;s QoS intent (%s); the first problem of each.</p>\n<ul id=\"nccl-chain\">", plural(c.Hosts, "host", "hosts"), plural(c.Problems, "problem", "problems"))
		for _, h := range c.Listed {
			fmt.Fprintf(w, "<li>%s: %s</li>", esc(h.Host), esc(h.first()))
		}
		if m := c.more(); m > 0 {
			fmt.Fprintf(w, "<li>… and %d more</li>", m)
		}
		fmt.Fprintln(w, "</ul>")
	}
}
