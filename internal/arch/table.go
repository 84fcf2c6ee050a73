package arch

import (
	"fmt"
	"strings"
)

// Module is the module path every row's Pkg is relative to.
const Module = "github.com/rocectl/rocectl"

// Kind says who may import a row's packages, whatever its May lists.
type Kind string

const (
	// Program is a main package. Nothing imports it.
	Program Kind = "program"
	// Product is library code the shipped binaries link. It may import
	// products and libs below it, never a test kit, a tool or a program.
	Product Kind = "product"
	// Lib is a small shipped helper under internal/lib: anything may
	// import it, and it imports nothing of the module.
	Lib Kind = "lib"
	// TestKit is test support (fakes, fixtures, namespaces, built
	// binaries). Only _test.go files, other test kits, tools, programs
	// that are not shipped and test-only packages import it.
	TestKit Kind = "testkit"
	// Tool is a generator under internal/tools: a program nothing imports.
	Tool Kind = "tool"
	// Test is a package that holds tests (and their helpers) only.
	// Nothing imports it.
	Test Kind = "test"
)

// Row is one package of the module (and its subpackages, unless a longer
// row names them).
type Row struct {
	Pkg   string // path below Module
	Layer int    // a row may import only rows of lower layers
	Kind  Kind
	Job   string // one line: what the package is for
	// May are the rows (Pkg) this row's non-test files may import.
	// Libs are not listed: every row may import them.
	May []string
	// Ext, when not nil, are the only packages outside the module (and
	// outside the standard library) the row may depend on, by path prefix;
	// an empty, non-nil Ext is the standard library only. Nil is not
	// checked.
	Ext []string
	// Shipped marks the programs the package and the Ansible role install.
	Shipped bool
}

// Table is the import contract of DESIGN.md §2, lowest layer first. The
// tests in this package enforce it against `go list` and check that
// docs/architecture.md is generated from it.
var Table = []Row{
	// 0: leaves.
	{Pkg: "port", Layer: 0, Kind: Product, Ext: []string{},
		Job: "the one Port type (an RDMA port, its netdev, bond, PF/VF role) that discovery produces and profiles match"},
	{Pkg: "lldp", Layer: 0, Kind: Product, Ext: []string{"golang.org/x/sys/"},
		Job: "LLDP/DCBX frame decoding and the passive listener for the switch-peer check"},
	{Pkg: "doc", Layer: 0, Kind: Product, Ext: []string{},
		Job: "every JSON document rocectl writes and reads (audit/apply, verify, peer, watch, nccl-env, topo, version), with schema_version: cli writes through it, report reads through it"},
	{Pkg: "statedir", Layer: 0, Kind: Product, Ext: []string{"golang.org/x/sys/"},
		Job: "the state dir as a trust boundary: the lock, the journal files (durable writes, done/abandoned, prune), state files, and the ownership/mode/symlink checks"},
	{Pkg: "nic/dcb", Layer: 0, Kind: Product, Ext: []string{"golang.org/x/sys/", "github.com/vishvananda/"},
		Job: "the dcbnl codec: DCB state (ETS, PFC, APP, buffers, DCBX) to and from netlink messages, byte for byte"},
	{Pkg: "nic/nvconfig", Layer: 0, Kind: Product, Ext: []string{},
		Job: "firmware NVConfig: mstconfig/mlxconfig query output parsed into default, current and next-boot per setting, and the one place rocectl runs an external program (mstconfig, bounded)"},
	{Pkg: "internal/lib/parallel", Layer: 0, Kind: Lib, Ext: []string{},
		Job: "the few-at-a-time loop of per-port passes (discovery, GID tables, observation)"},
	{Pkg: "internal/lib/thp", Layer: 0, Kind: Lib, Ext: []string{"golang.org/x/sys/"},
		Job: "a one-shot command's few large buffers on transparent huge pages"},
	{Pkg: "internal/lib/input", Layer: 0, Kind: Lib, Ext: []string{"golang.org/x/sys/"},
		Job: "bounded reads of what a command line names (import's dumps, report's documents): regular files only, a cap named in the error, the command's context honoured, stdin included"},

	// 1: the two sides that never meet.
	{Pkg: "policy", Layer: 1, Kind: Product, May: []string{"port"}, Ext: []string{"github.com/pelletier/go-toml/v2"},
		Job: "profiles: TOML → Profile (strict, all problems in one pass), Resolve per port, Diff; pure"},
	{Pkg: "nic", Layer: 1, Kind: Product, May: []string{"port", "nic/dcb", "nic/nvconfig"},
		Job: "kernel interfaces (rtnetlink, dcbnl, ethtool, devlink, sysfs/configfs/debugfs), discovery, snapshots, text-dump parsers"},

	// 2-3: what reads both; the driver layer and the plan built on it.
	{Pkg: "nccl", Layer: 2, Kind: Product, May: []string{"policy", "nic", "port"},
		Job: "NCCL's config file and the NCCL variables a host's ports imply; PCIe topology hints"},
	{Pkg: "verify", Layer: 2, Kind: Product, May: []string{"doc", "policy", "nic", "port"},
		Job: "read-back and traffic as one run (Run, the work of rocectl verify), verbs loopback and two-host traffic (cgo, -tags verbs), the counter sampler shared by watch, the guard and the metrics, watch's rates, the pause-storm detector"},
	{Pkg: "report", Layer: 2, Kind: Product, May: []string{"doc", "policy", "port"},
		Job: "the fleet view over many hosts' JSON documents"},

	{Pkg: "driver", Layer: 2, Kind: Product, May: []string{"policy", "port", "nic/dcb"},
		Job: "what a NIC driver adds to a plain write (companions, refusals, order, disruptions, capabilities, buffer models): one interface, a package per driver (mlx5, bnxt, ice, generic), picked by driver/known"},

	{Pkg: "plan", Layer: 3, Kind: Product, May: []string{"policy", "port", "driver", "nic/dcb"},
		Job: "the plan, built in one place: diff, companions, driver passes (buffer checks, ETS before PFC, lossless queues, DCBX, recomputes), disruptions; reads the host through an interface"},

	// 4-6: the host, transactions, the switch peer.
	{Pkg: "host", Layer: 4, Kind: Product, May: []string{"policy", "nic", "nic/dcb", "nic/nvconfig", "nccl", "port", "driver", "plan"},
		Job: "the registry: per setting kind, how it is observed and written through the kernel; the plan's passes, which ask the port's driver"},
	{Pkg: "apply", Layer: 5, Kind: Product, May: []string{"statedir", "plan", "host", "verify", "policy", "nccl", "nic", "nic/dcb", "nic/nvconfig", "port"},
		Job: "transactions: write → read-back → soak → confirm → rollback, the journal, lock and recovery"},
	{Pkg: "peer", Layer: 6, Kind: Product, May: []string{"statedir", "driver", "nic/dcb", "policy", "nic", "port", "lldp"},
		Job: "the switch-peer check: what the switch announces in DCBX against the profile, and its state file"},

	// 7-10: the daemon, the commands, the programs.
	{Pkg: "agent", Layer: 7, Kind: Product, May: []string{"statedir", "plan", "driver", "nic/dcb", "nic/nvconfig", "apply", "host", "verify", "peer", "policy", "nccl", "nic", "port", "lldp"},
		Job: "the daemon: drift loop, counter sampling, metrics, sd_notify/watchdog, LLDP listener"},
	{Pkg: "cli", Layer: 8, Kind: Product, May: []string{"statedir", "doc", "plan", "driver", "nic/dcb", "nic/nvconfig", "apply", "host", "verify", "peer", "policy", "nccl", "nic", "port", "lldp", "report"},
		Job: "the cobra commands: flags in, rendering out; no work of its own (rocectl does not link the daemon)"},
	{Pkg: "cli/agentcmd", Layer: 9, Kind: Product, May: []string{"cli", "agent"},
		Job: "rocectl-agent's command: the daemon's flags → agent.Run"},
	{Pkg: "cmd", Layer: 10, Kind: Program, Shipped: true, May: []string{"cli", "cli/agentcmd"},
		Job: "the two shipped programs, rocectl and rocectl-agent: signals, exit codes; no logic"},

	// 11-14: test kits, above everything they fake, imported by tests only.
	// The simulator: the leaf its driver models share, the models (one
	// package per driver, sharing nothing with the product's driver
	// packages), the Sim that dispatches to them.
	{Pkg: "nic/nictest/simstate", Layer: 11, Kind: TestKit, May: []string{"nic", "nic/dcb"},
		Job: "the simulator's leaf: the driver model interface, what a model sees of a link, and the generic kernel (dcbnl) rules"},
	{Pkg: "lldp/lldptest", Layer: 11, Kind: TestKit, May: []string{"lldp"},
		Job: "LLDP/DCBX test frames"},
	{Pkg: "nic/nictest/mlx5sim", Layer: 12, Kind: TestKit, May: []string{"nic", "nic/dcb", "nic/nictest/simstate"},
		Job: "the simulator's mlx5_core model: PFC, pause, port buffers and thresholds, DCBX, APP, ETS read-back, each citing its driver function"},
	{Pkg: "nic/nictest/bnxtsim", Layer: 12, Kind: TestKit, May: []string{"nic", "nic/dcb", "nic/nictest/simstate"},
		Job: "the simulator's bnxt_en model: host IEEE DCBX, ETS validation, PFC after ETS, lossless queues, host-mode placeholders, each citing its driver function"},
	{Pkg: "nic/nictest/icesim", Layer: 12, Kind: TestKit, May: []string{"nic", "nic/dcb", "nic/nictest/simstate"},
		Job: "the simulator's ice model: DCB set ops refused while the firmware LLDP agent runs, the agent's private flag, link flow control refused under PFC, the TC table checks, each citing its driver function"},
	{Pkg: "nic/nictest/peersim", Layer: 12, Kind: TestKit, May: []string{"nic", "nic/dcb", "nic/nictest/simstate"},
		Job: "the simulator's qede and cxgb4 models: the link partner's DCBX their peer ops report"},
	{Pkg: "nic/nictest", Layer: 13, Kind: TestKit, May: []string{"nic", "nic/dcb", "nic/nictest/simstate", "nic/nictest/mlx5sim", "nic/nictest/bnxtsim", "nic/nictest/icesim", "nic/nictest/peersim"},
		Job: "the simulated kernel: the kernel's state, each write handed to the model of the link's driver (mlx5sim, bnxtsim, icesim, peersim, else generic)"},
	{Pkg: "internal/testkit", Layer: 14, Kind: TestKit, May: []string{"nic", "nic/dcb", "nic/nvconfig", "nic/nictest"},
		Job: "test kits: fixture hosts and their generator, network namespaces, built binaries, leak checks, dirtree, ttar, median"},

	// 15: programs nothing imports.
	{Pkg: "internal/tools", Layer: 15, Kind: Tool, May: []string{"cli", "cli/agentcmd", "internal/testkit"},
		Job: "generators: gendocs (man pages, completions), mkhosts (testdata/hosts)"},
	{Pkg: "bench", Layer: 15, Kind: Program, May: []string{"apply", "cli", "nic", "statedir", "internal/testkit"},
		Job: "benchmark drivers (not shipped): apply against the bash script, the audit floor, the fleet report's generated corpus"},

	// 16: tests.
	{Pkg: "internal/arch", Layer: 16, Kind: Test,
		Job: "this table, the tests that enforce it, and docs/architecture.md generated from it"},
	{Pkg: "test", Layer: 16, Kind: Test,
		Job: "end-to-end tests of the built binaries and the Soft-RoCE VM lab"},
	{Pkg: "systemd", Layer: 16, Kind: Test,
		Job: "the unit files and their tests"},
	{Pkg: "packaging", Layer: 16, Kind: Test,
		Job: "the Debian package definition and its tests"},
	{Pkg: "deploy", Layer: 16, Kind: Test,
		Job: "the Ansible role and its tests"},
}

// RowOf returns the row an import path belongs to: the longest Pkg that is
// the path or a parent of it. ok is false for a path outside the module
// or in no row.
func RowOf(path string) (r Row, ok bool) {
	rel, inMod := strings.CutPrefix(path, Module+"/")
	if !inMod {
		return Row{}, false
	}
	best := -1
	for i, row := range Table {
		if (rel == row.Pkg || strings.HasPrefix(rel, row.Pkg+"/")) && (best < 0 || len(row.Pkg) > len(Table[best].Pkg)) {
			best = i
		}
	}
	if best < 0 {
		return Row{}, false
	}
	return Table[best], true
}

// Allows reports whether row from's non-test files may import a package
// of row to.
func Allows(from, to Row) bool {
	if from.Pkg == to.Pkg || to.Kind == Lib {
		return true
	}
	for _, m := range from.May {
		if m == to.Pkg {
			return true
		}
	}
	return false
}

// kindImporters says which kinds' non-test files may import a kind.
var kindImporters = map[Kind][]Kind{
	Program: {},
	Product: {Product, Program, TestKit, Tool, Test},
	Lib:     {Lib, Product, Program, TestKit, Tool, Test},
	TestKit: {TestKit, Tool, Program, Test},
	Tool:    {},
	Test:    {},
}

// KindMayImport reports whether a row of kind from may import one of kind
// to at all (a shipped program may not import a test kit, whatever its
// May says).
func KindMayImport(from Row, to Row) bool {
	if from.Pkg == to.Pkg {
		return true
	}
	if from.Shipped && to.Kind == TestKit {
		return false
	}
	for _, k := range kindImporters[to.Kind] {
		if k == from.Kind {
			return true
		}
	}
	return false
}

// Markdown renders docs/architecture.md from the table.
func Markdown() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from internal/arch/table.go by `go test ./internal/arch -update`. DO NOT EDIT. -->\n\n")
	b.WriteString("# Architecture: who may import whom\n\n")
	b.WriteString("This file is generated from the import contract in `internal/arch` (`Table` in\n" +
		"`internal/arch/table.go`), the one place it is written down; `go test ./internal/arch`\n" +
		"enforces it against `go list` and fails when this file differs from what the table\n" +
		"generates. Change the table, then run `go test ./internal/arch -update`.\n\n")
	b.WriteString("Layers are numbered from the bottom. A package may import only packages of lower\n" +
		"layers, and of those only the ones its row lists (its own subpackages and the shipped\n" +
		"helpers under `internal/lib` always): no arrow points up, so there is no cycle.\n" +
		"Test files (`_test.go`) may import anything but programs and tools.\n\n")
	b.WriteString("```\n")
	var lines []string
	for i := 0; i < len(Table); {
		j := i
		var names []string
		for ; j < len(Table) && Table[j].Layer == Table[i].Layer; j++ {
			names = append(names, Table[j].Pkg)
		}
		lines = append(lines, fmt.Sprintf("%2d  %s\n", Table[i].Layer, strings.Join(names, ", ")))
		i = j
	}
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString(lines[i])
	}
	b.WriteString("```\n\n")
	b.WriteString("## Kinds\n\n")
	b.WriteString("| kind | what | imported by |\n|---|---|---|\n")
	for _, k := range []struct {
		k    Kind
		what string
	}{
		{Program, "a main package"},
		{Product, "library code the shipped binaries link"},
		{Lib, "a shipped helper under `internal/lib`; imports nothing of the module"},
		{TestKit, "test support: fakes, fixtures, namespaces, built binaries"},
		{Tool, "a generator under `internal/tools`"},
		{Test, "tests and their helpers; nothing imports it"},
	} {
		var by []string
		for _, i := range kindImporters[k.k] {
			by = append(by, string(i))
		}
		imp := "nothing"
		switch {
		case k.k == Lib:
			imp = "anything"
		case k.k == TestKit:
			imp = "tests, test kits, tools, programs that are not shipped"
		case len(by) > 0:
			imp = strings.Join(by, ", ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", k.k, k.what, imp)
	}
	b.WriteString("\n## Layers\n\n")
	b.WriteString("| layer | package | kind | job | may import (of this module) | outside the module |\n|---|---|---|---|---|---|\n")
	for i := len(Table) - 1; i >= 0; i-- {
		r := Table[i]
		may := "—"
		if len(r.May) > 0 {
			ms := make([]string, len(r.May))
			for j, m := range r.May {
				ms[j] = "`" + m + "`"
			}
			may = strings.Join(ms, ", ")
		}
		ext := "not checked"
		switch {
		case r.Ext == nil:
		case len(r.Ext) == 0:
			ext = "standard library only"
		default:
			es := make([]string, len(r.Ext))
			for j, e := range r.Ext {
				es[j] = "`" + strings.TrimSuffix(e, "/") + "`"
			}
			ext = "standard library, " + strings.Join(es, ", ")
		}
		kind := string(r.Kind)
		if r.Shipped {
			kind += " (shipped)"
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s | %s | %s |\n", r.Layer, r.Pkg, kind, r.Job, may, ext)
	}
	b.WriteString("\nBesides the table, `internal/arch` checks that `rocectl` links no part of the daemon\n" +
		"(`agent`, `cli/agentcmd`, the Prometheus client, `net/http`) and that the shipped\n" +
		"binaries link no test kit, no `testing` and no test hook.\n")
	return b.String()
}
