package arch

import (
	"strings"
	"testing"
)

// TestSimulatorSharesNothingWithDriver: the simulator's driver models
// (nic/nictest and the model packages under it) and the product's driver
// layer (package driver and driver/*) are checked against each other, so
// neither may be derived from the other: no package under nic/nictest
// depends on driver or its subpackages, in its code or its tests. The
// model packages go further: of the module they import only the state
// types (nic/dcb, nic/snapshot, port) and the simulator's leaf,
// nic/nictest/simstate.
func TestSimulatorSharesNothingWithDriver(t *testing.T) {
	pkgs := list(t, "./nic/nictest/...")
	modelMay := []string{"nic/dcb", "nic/snapshot", "port", "nic/nictest/simstate"}
	checked := 0
	for path, p := range pkgs {
		if !under(path, "nic/nictest") {
			continue
		}
		checked++
		for _, d := range p.Deps {
			if under(d, "driver") {
				t.Errorf("%s depends on %s: the simulator shares nothing with the product's driver layer", path, d)
			}
		}
		for _, imp := range append(append([]string{}, p.TestImports...), p.XTestImports...) {
			if under(imp, "driver") {
				t.Errorf("%s's tests import %s: the simulator shares nothing with the product's driver layer", path, imp)
			}
		}
		if path == mod+"/nic/nictest" {
			continue // the Sim itself implements nic.Kernel
		}
		for _, imp := range p.Imports {
			if !own(imp) || strings.HasPrefix(imp, mod+"/internal/lib/") {
				continue
			}
			ok := false
			for _, m := range modelMay {
				ok = ok || imp == mod+"/"+m
			}
			if !ok {
				t.Errorf("%s imports %s: a driver model imports only %v of the module", path, imp, modelMay)
			}
		}
	}
	if checked < 5 {
		t.Errorf("checked %d packages under nic/nictest, want nictest, simstate and the model packages", checked)
	}
}
