package dump

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// Kind names a dump format.
type Kind string

// The formats Parse recognises.
const (
	KindMlnxQos       Kind = "mlnx_qos"
	KindEthtoolS      Kind = "ethtool -S"
	KindEthtoolA      Kind = "ethtool -a"
	KindEthtoolI      Kind = "ethtool -i"
	KindShowGids      Kind = "show_gids"
	KindIPLink        Kind = "ip -d -s link"
	KindDCBPFC        Kind = "dcb pfc show"
	KindDCBApp        Kind = "dcb app show"
	KindIbvDevinfo    Kind = "ibv_devinfo"
	KindRdmaLink      Kind = "rdma link"
	KindDevlinkParams Kind = "devlink dev param show"
	KindLspci         Kind = "lspci -vvv"
	KindLspciTree     Kind = "lspci -t"
	KindGPUTopo       Kind = "nvidia-smi topo -m"
	KindMstconfig     Kind = "mstconfig q"
	KindUnknownCmd    Kind = "" // text Parse did not recognise
)

// Source is where a value came from.
type Source struct {
	File string
	Line int // 1-based
}

func (s Source) String() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Warning is something recognised but not usable.
type Warning struct {
	At  Source
	Msg string
}

func (w Warning) String() string { return w.At.String() + ": " + w.Msg }

// Block is one command's output.
type Block struct {
	Kind Kind
	// Netdev is the interface the block is about when the dump or its
	// command line names it; "" for dumps that do not (mlnx_qos, ethtool
	// -S without its command line).
	Netdev string
	At     Source // first line of the output
	// Host is the host name the prompt line before the output names
	// ("[root@gpu-17 ~]#", "user@gpu-17:~$"); "" without one.
	Host string `json:",omitempty"`
	// Errno is set when the tool answered that the kernel refused the
	// request (ethtool -a on a driver without pause support prints only
	// "netlink error: Operation not supported"): the answer is known, and
	// it is this errno, not a value.
	Errno string `json:",omitempty"`

	Qos     *MlnxQos
	Stats   *Stats
	Pause   *Pause
	Driver  *DriverInfo
	GIDs    []GID
	Links   []Link // ip link prints every interface; other kinds leave it empty
	DCBPFC  *DCBPFC
	DCBApps []DCBApp

	// The kinds below were added later; omitempty keeps the parse of
	// the older kinds (their golden files) as it was.
	Devices       []RDMADevice   `json:",omitempty"` // ibv_devinfo
	RDMALinks     []RDMAPort     `json:",omitempty"` // rdma link
	DevlinkParams []DevlinkParam `json:",omitempty"`
	PCI           []PCIFunction  `json:",omitempty"` // lspci -v…
	PCITree       []PCITreeNode  `json:",omitempty"` // lspci -t
	GPUTopo       *GPUTopo       `json:",omitempty"`
	NVConfig      *NVConfigDump  `json:",omitempty"` // mstconfig/mlxconfig q
}

// line is one input line and where it is.
type line struct {
	text string
	at   Source
}

// promptRE matches a shell prompt with a command: "$ cmd", "# cmd",
// "[root@h ~]# cmd", "user@h:~$ cmd", "+ cmd" (set -x).
var promptRE = lazyRegexp(`^(?:\[[^\]]*\]\s*[#$]|[\w.-]+@[\w.-]+:[^$#]*[#$]|[#$>+])\s+(\S.*)$`)

// promptMatch is promptRE's submatches of s, nil without a prompt. Most
// lines of a dump are output, which cannot be a prompt line unless it
// starts with one of the prompt's characters or holds the "@" of
// "user@host:": those skip the regular expression, which took a large
// share of an import's time on thousands of counter rows.
func promptMatch(s string) []string {
	if s == "" || !strings.ContainsRune("[#$>+", rune(s[0])) && !strings.Contains(s, "@") {
		return nil
	}
	return promptRE().FindStringSubmatch(s)
}

// promptHostRE finds the host name in a prompt: "[user@host dir]#" or
// "user@host:dir$", also inside a prompt pasted twice ("$ user@host:~$").
var promptHostRE = lazyRegexp(`(?:^\[[\w.-]+@([\w.-]+)[^\]]*\]\s*[#$]|(?:^|\s)[\w.-]+@([\w.-]+):[^$#\s]*[#$](?:\s|$))`)

// promptHost is the host name a prompt line names, "" if none.
func promptHost(text string) string {
	m := promptHostRE().FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return ""
	}
	return m[1] + m[2]
}

// notSupportedRE is ethtool's answer when the driver has no pause
// operations: "netlink error: Operation not supported" (ethtool 5.6 and
// later, over netlink) or "Cannot get device pause settings: Operation not
// supported" (ioctl).
var notSupportedRE = lazyRegexp(`^(?:netlink error|Cannot get device pause settings): Operation not supported$`)

// commandNetdev returns the kind a command line asks for and the
// interface it names, if the line is one of the commands this package
// reads.
func commandNetdev(cmd string) (Kind, string, bool) {
	f := strings.Fields(cmd)
	if len(f) > 0 && f[0] == "sudo" {
		f = f[1:]
	}
	if len(f) == 0 {
		return "", "", false
	}
	last := func() string {
		for i := len(f) - 1; i > 0; i-- {
			if !strings.HasPrefix(f[i], "-") && f[i] != "|" {
				return f[i]
			}
		}
		return ""
	}
	// Only the command before a pipe names the interface.
	for i, x := range f {
		if x == "|" {
			f = f[:i]
			break
		}
	}
	// A prompt pasted twice ("$ user@host:~$ cmd") leaves one inside
	// the command.
	if m := promptRE().FindStringSubmatch(cmd); m != nil && m[1] != cmd {
		if k, nd, ok := commandNetdev(m[1]); ok {
			return k, nd, ok
		}
	}
	switch base := f[0][strings.LastIndex(f[0], "/")+1:]; base {
	case "mlnx_qos":
		for i := 1; i+1 < len(f); i++ {
			if f[i] == "-i" || f[i] == "--interface" {
				return KindMlnxQos, f[i+1], true
			}
		}
		return KindMlnxQos, "", true
	case "ethtool":
		if len(f) >= 3 {
			switch f[1] {
			case "-S", "--statistics":
				return KindEthtoolS, last(), true
			case "-a", "--show-pause":
				return KindEthtoolA, last(), true
			case "-i", "--driver":
				return KindEthtoolI, last(), true
			}
		}
	case "show_gids":
		return KindShowGids, "", true
	case "ip":
		return KindIPLink, "", true
	case "ibv_devinfo":
		return KindIbvDevinfo, "", true
	case "rdma":
		return KindRdmaLink, "", true
	case "devlink":
		return KindDevlinkParams, "", true
	case "lspci":
		for _, x := range f[1:] {
			if strings.HasPrefix(x, "-") && !strings.HasPrefix(x, "--") && strings.Contains(x, "t") {
				return KindLspciTree, "", true
			}
		}
		return KindLspci, "", true
	case "nvidia-smi":
		return KindGPUTopo, "", true
	case "mstconfig", "mlxconfig":
		return KindMstconfig, "", true
	case "dcb":
		for i := 1; i+1 < len(f); i++ {
			if f[i] == "dev" {
				if f[1] == "app" {
					return KindDCBApp, f[i+1], true
				}
				return KindDCBPFC, f[i+1], true
			}
		}
	}
	return "", "", false
}

// Parse splits text into command outputs and parses each one it
// recognises. Text it does not recognise at all is a warning, as is
// every line of a recognised block that it could not use.
func Parse(file string, text []byte) ([]Block, []Warning) {
	// No-break spaces are what a dump copied from a web page or a chat
	// has between its columns and after its prompt: spaces to the tool.
	str := strings.ReplaceAll(string(text), "\u00a0", " ")
	if strings.Contains(str, "\r\n") {
		str = strings.ReplaceAll(str, "\r\n", "\n")
	}
	if strings.IndexByte(str, 0x1b) >= 0 {
		str = stripTerminalEscapes(str)
	}
	// Split at prompt lines; each segment has the netdev its command
	// named, and the host its prompt named. A segment is parsed as soon
	// as the next command ends it: only one command's output is held as
	// lines at a time, not the whole input (an import of 256 interfaces'
	// ethtool -S is a million lines).
	var blocks []Block
	var warns []Warning
	kind, netdev, host := Kind(""), "", ""
	var lines []line
	flush := func() {
		bs, ws := parseSegment(lines, kind, netdev)
		for i := range bs {
			bs[i].Host = host
		}
		blocks = append(blocks, bs...)
		warns = append(warns, ws...)
		// A new slice, sized like the last (the parsers may keep what
		// they were given; the next interface's output is as long).
		lines = make([]line, 0, len(lines))
	}
	// As strings.Split would have the lines, the empty one after a last
	// newline included.
	for n := 1; ; n++ {
		t, rest, found := strings.Cut(str, "\n")
		str = rest
		l := line{text: strings.TrimRight(t, " \t\r"), at: Source{file, n}}
		k, nd, h, cmd := Kind(""), "", host, false
		if m := promptMatch(strings.TrimSpace(l.text)); m != nil {
			// Any command ends the previous output; one of ours may
			// name the interface of the output that follows.
			k, nd, _ = commandNetdev(m[1])
			h, cmd = promptHost(l.text), true
		} else if bk, bnd, ok := bareCommand(l.text); ok {
			// One of our commands pasted without its prompt ("rdma
			// link" above its output, as documentation shows it).
			k, nd, cmd = bk, bnd, true
		}
		if cmd {
			flush()
			kind, netdev, host = k, nd, h
		} else {
			lines = append(lines, l)
		}
		if !found {
			break
		}
	}
	flush()
	return blocks, warns
}

// stripTerminalEscapes drops terminal control sequences from a dump.
// nvidia-smi underlines the header of `topo -m` (ESC[4m … ESC[0m) even
// when its output goes to a file, as on the H200 server of
// testdata/corpus/nvidia-smi-topo-m-1gpu-h200-vm-ansi.txt, and colour
// output (ip -c, grep --color) pasted from a terminal carries SGR codes
// too: to the parsers they are part of a word. Dropped are CSI sequences
// (ESC [ parameters intermediates final, ECMA-48 5.4), OSC strings (ESC ]
// … BEL or ESC \) and two-or-more-byte escapes such as ESC ( B.
func stripTerminalEscapes(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != 0x1b {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		switch {
		case i < len(s) && s[i] == '[':
			i++
			for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f { // parameters, intermediates
				i++
			}
			if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e { // final byte
				i++
			}
		case i < len(s) && s[i] == ']':
			for i < len(s) && s[i] != 0x07 && !(s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\') {
				i++
			}
			if i < len(s) && s[i] == 0x07 {
				i++
			} else if i < len(s) {
				i += 2
			}
		default:
			for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f { // intermediates
				i++
			}
			if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
				i++
			}
		}
	}
	return b.String()
}

// bareCommands are the tools whose command line, pasted without a
// prompt, is still read as a command: no output line of any dump this
// package reads starts with one of these words followed by an option or
// subcommand.
var bareCommands = map[string]bool{"mlnx_qos": true, "ethtool": true, "show_gids": true, "dcb": true, "rdma": true,
	"devlink": true, "ibv_devinfo": true, "lspci": true, "nvidia-smi": true, "sudo": true,
	"mstconfig": true, "mlxconfig": true}

func bareCommand(text string) (Kind, string, bool) {
	if text == "" || indented(text) {
		return "", "", false
	}
	// The first field as strings.Fields has it, without splitting the
	// whole line: most lines are output, not a command.
	first := text
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		first = text[:i]
	}
	if !bareCommands[first] {
		return "", "", false
	}
	return commandNetdev(text)
}

// parseSegment parses the lines of one command's output (or of a file
// without prompts), which may still hold several outputs one after the
// other: each parser takes the lines it recognises and hands back the
// rest.
func parseSegment(ls []line, kind Kind, netdev string) ([]Block, []Warning) {
	var blocks []Block
	var warns []Warning
	for len(ls) > 0 {
		if strings.TrimSpace(ls[0].text) == "" {
			ls = ls[1:]
			continue
		}
		// A refusal names neither the command nor the interface: only the
		// prompt line before it says which request it answers.
		if kind == KindEthtoolA && netdev != "" && notSupportedRE().MatchString(strings.TrimSpace(ls[0].text)) {
			blocks = append(blocks, Block{Kind: kind, Netdev: netdev, At: ls[0].at, Errno: "EOPNOTSUPP"})
			ls = ls[1:]
			continue
		}
		var b *Block
		var rest []line
		var ws []Warning
		for _, p := range parsers {
			if b, rest, ws = p(ls); b != nil {
				break
			}
		}
		if b == nil {
			warns = append(warns, Warning{ls[0].at, fmt.Sprintf("not a dump this version reads: %q", clip(ls[0].text))})
			ls = skipUnknown(ls[1:])
			continue
		}
		if b.Netdev == "" {
			b.Netdev = netdev
		}
		blocks = append(blocks, *b)
		warns = append(warns, ws...)
		ls = rest
	}
	return blocks, warns
}

// skipUnknown drops lines until one a parser could start at.
func skipUnknown(ls []line) []line {
	for len(ls) > 0 {
		for _, p := range parsers {
			if b, _, _ := p(ls); b != nil {
				return ls
			}
		}
		ls = ls[1:]
	}
	return nil
}

// parsers each recognise the start of one format; nil Block: not theirs.
var parsers = []func([]line) (*Block, []line, []Warning){
	parseMlnxQos, parseEthtoolS, parseEthtoolA, parseEthtoolI, parseShowGids, parseIPLink, parseDCBPFC, parseDCBApp,
	parseIbvDevinfo, parseRdmaLink, parseRdmaLinkJSON, parseDevlinkParams, parseDevlinkParamsJSON, parseLspci,
	parseLspciTree, parseGPUTopo, parseMstconfig,
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// lazyRegexp compiles expr on first use. The package's two dozen patterns
// serve only `rocectl import`, and compiling them when the package
// initialised cost every rocectl command about 0.5 ms of its start-up
// (GODEBUG=inittrace=1). A pattern that does not compile panics at its
// first use, which every parser's tests reach.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
