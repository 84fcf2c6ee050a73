package host

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rocectl/rocectl/driver/bnxt"
	"github.com/rocectl/rocectl/driver/ice"
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
)

// ccGroup is the step that holds a port's ECN changes on a driver that
// stages congestion-control writes and takes them on a commit
// (driver.Caps.CCCommit: bnxt_re's configfs apply): one step, its writes
// then one commit, journalled and undone as one unit.
const ccGroup = "cc"

// ccStep says whether c goes in its port's ccGroup step.
func ccStep(c policy.Change) bool {
	return (c.Kind == policy.KindECNEnable || c.Kind == policy.KindECNParam) &&
		c.Port != nil && known.For(c.Port.Driver).Caps().CCCommit
}

// CCSaved is what a port's congestion-control attributes held before a
// step wrote them (bnxt_re configfs or debugfs), in the order the step
// writes them: rollback writes each back as it was and commits again,
// so that what the profile does not name (roce_prio when ECN goes off)
// is restored too.
type CCSaved struct {
	Attrs []CCAttr `json:"attrs"`
}

// CCAttr is one attribute's saved content.
type CCAttr struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CheckCCSaved refuses saved attributes a journal could not have
// recorded: a name that is not one file of the interface's directory, or
// a value longer than an attribute holds (undo writes each below the
// port's cc directory).
func CheckCCSaved(s *CCSaved) error {
	for _, a := range s.Attrs {
		if a.Name == "" || a.Name == "." || a.Name == ".." || strings.ContainsAny(a.Name, "/\x00") {
			return fmt.Errorf("saved congestion-control attribute %q is not a file name", a.Name)
		}
		if len(a.Value) > 64 {
			return fmt.Errorf("saved congestion-control attribute %s holds %d bytes, more than the 64 an attribute holds", a.Name, len(a.Value))
		}
	}
	return nil
}

// ccAttrs lists the attributes below e's directory that st writes.
func ccAttrs(e *nic.ECN, st Step) ([]string, error) {
	var out []string
	add := func(a string) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, c := range st.Changes {
		arg, err := policy.ParseECNArg(c.Kind, c.Arg)
		if err != nil {
			return nil, err
		}
		if c.Kind == policy.KindECNEnable {
			if e.Kind != nic.ECNBnxt {
				continue // its own file (OFED), or refused by the write
			}
			add(nic.BnxtRoCEPrio)
			add(nic.BnxtECNEnable)
			continue
		}
		a, err := e.ParamAttr(arg.Dir, arg.Param, policy.ECNUpstreamName(arg.Param))
		if err != nil {
			continue // the write names it
		}
		add(a)
	}
	return out, nil
}

// captureCC saves, before the first write of a bnxt_re cc step, what
// each attribute it writes holds. A LAG step saves nothing: its undo
// writes the before-values and commits.
func captureCC(h *Host, _ *policy.Desired, st *Step) error {
	if len(st.Slaves) > 0 || st.Changes[0].Port == nil {
		return nil
	}
	e, err := h.ecnOf(st.Changes[0].Port)
	if err != nil || (e.Kind != nic.ECNBnxt && e.Kind != nic.ECNBnxtDebugfs) {
		return nil // the write reports it
	}
	attrs, err := ccAttrs(e, *st)
	if err != nil {
		return err
	}
	saved := &CCSaved{}
	for _, a := range attrs {
		v, err := e.Attr(a)
		if err != nil {
			return fmt.Errorf("save %s before writing it: %w", a, err)
		}
		saved.Attrs = append(saved.Attrs, CCAttr{Name: a, Value: v})
	}
	st.CC = saved
	return nil
}

// undoCC restores what captureCC saved, each attribute as it was, and
// commits (bnxt_re configfs apply); a step without it writes its
// before-values.
func undoCC(w *stepWriter) error {
	if w.st.CC == nil {
		return writeECN(w)
	}
	if err := CheckCCSaved(w.st.CC); err != nil {
		return err
	}
	e, err := w.h.ecnOf(w.port)
	if err != nil {
		return err
	}
	for _, a := range w.st.CC.Attrs {
		if err := e.SetAttr(a.Name, a.Value); err != nil {
			return fmt.Errorf("restore %s: %w", a.Name, err)
		}
	}
	return e.Commit()
}

// param is one ECN parameter change of a step, parsed.
type param struct {
	c    policy.Change
	arg  policy.ECNArg
	n    int64
	attr string // bnxt_re: its configfs or debugfs attribute
}

// writeECN writes a step's ECN settings: one file each, except on
// bnxt_re's configfs, where the per-priority enables of the step become
// its one ecn_enable and roce_prio, every value is checked against what
// the driver takes before the first write, and one apply ends the step.
func writeECN(w *stepWriter) error {
	e, err := w.h.ecnOf(w.port)
	if err != nil {
		return err
	}
	var (
		params  []param
		dirs    []string
		prios   []int
		enables []bool
		enableC []policy.Change
	)
	// Parse and check everything before the first write: a bad value is
	// an error that changed nothing.
	for _, c := range w.st.Changes {
		arg, err := policy.ParseECNArg(c.Kind, c.Arg)
		if err != nil {
			return w.fail(c, err)
		}
		v := w.value(c)
		if c.Kind == policy.KindECNEnable {
			on, err := policy.BoolCodec.Parse(v)
			if err != nil {
				return w.fail(c, err)
			}
			dirs, prios, enables, enableC = append(dirs, arg.Dir), append(prios, arg.Prio), append(enables, on), append(enableC, c)
			continue
		}
		n, err := policy.Int64Codec.Parse(v)
		if err != nil {
			return w.fail(c, err)
		}
		p := param{c: c, arg: arg, n: n}
		if e.Kind == nic.ECNBnxt || e.Kind == nic.ECNBnxtDebugfs {
			if p.attr, err = e.ParamAttr(arg.Dir, arg.Param, policy.ECNUpstreamName(arg.Param)); err != nil {
				return w.fail(c, err)
			}
			if why := bnxt.CCValueProblem(bnxtConfigfsName(p.attr), n); why != "" {
				return w.fail(c, fmt.Errorf("%s", why))
			}
		}
		if e.Kind == nic.ECNIrdma {
			if why := ice.IrdmaValueProblem(arg.Param, n); why != "" {
				return w.fail(c, fmt.Errorf("%s", why))
			}
		}
		params = append(params, p)
	}
	if e.Kind == nic.ECNBnxt {
		if err := checkHeldPrios(e, w, params, enableC); err != nil {
			return err
		}
	}
	if e.Kind == nic.ECNBnxt && len(enableC) > 0 {
		on, prio, ok := bnxt.EnableWrite(prios, enables)
		if !ok {
			return w.fail(enableC[0], fmt.Errorf("%s: ECN on more than one priority", bnxt.EnableNote))
		}
		if why := bnxt.CCValueProblem(nic.BnxtRoCEPrio, int64(prio)); on && why != "" {
			return w.fail(enableC[0], fmt.Errorf("%s", why))
		}
		if err := e.StageBnxtEnable(on, prio); err != nil {
			return w.fail(enableC[0], err)
		}
	} else {
		for i, c := range enableC {
			if err := e.SetEnabled(dirs[i], prios[i], enables[i]); err != nil {
				return w.fail(c, err)
			}
		}
	}
	for _, p := range params {
		if err := e.SetParam(p.arg.Dir, p.arg.Param, policy.ECNUpstreamName(p.arg.Param), p.n); err != nil {
			return w.fail(p.c, err)
		}
	}
	if err := e.Commit(); err != nil {
		return w.fail(w.st.Changes[len(w.st.Changes)-1], err)
	}
	return nil
}

// checkHeldPrios refuses, before the step's first write, a bnxt_re
// configfs step that writes a priority attribute whose store refuses
// every write because of the value it holds (bnxt.HeldPrioProblem).
func checkHeldPrios(e *nic.ECN, w *stepWriter, params []param, enableC []policy.Change) error {
	check := func(c policy.Change, attr string) error {
		held, err := e.Hex(attr)
		if err != nil {
			return nil // the write reports it
		}
		if why := bnxt.HeldPrioProblem(attr, held); why != "" {
			return w.fail(c, fmt.Errorf("%s", why))
		}
		return nil
	}
	if len(enableC) > 0 {
		if err := check(enableC[0], nic.BnxtRoCEPrio); err != nil {
			return err
		}
	}
	for _, p := range params {
		if err := check(p.c, p.attr); err != nil {
			return err
		}
	}
	return nil
}

// bnxtConfigfsName is the configfs name of a bnxt_re attribute, for
// the range check: mainline's debugfs names the CNP's DSCP and priority
// after the firmware's fields.
func bnxtConfigfsName(attr string) string {
	switch attr {
	case "alt_vlan_dscp":
		return "cnp_dscp"
	case "alt_vlan_pcp":
		return "cnp_prio"
	}
	return attr
}
