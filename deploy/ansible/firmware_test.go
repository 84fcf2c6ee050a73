package ansible

import (
	"fmt"
	"strings"
	"testing"
)

// The firmware reboot handler is off by default and is the only reboot
// in the role: it runs only with rocectl_reboot_for_firmware, never in
// check mode, a batch of hosts at a time; the task that notifies it
// reads the audit's and the apply's pending[] (docs/schema/report.json).
func TestFirmwareRebootHandlerOffByDefault(t *testing.T) {
	handlers := roleDir + "/handlers/main.yml"
	tasks := roleDir + "/tasks/main.yml"
	defaults := roleDir + "/defaults/main.yml"
	docs := loadYAML(t, []string{handlers, tasks, defaults})
	if d, _ := docs[defaults].(map[string]any); fmt.Sprint(d["rocectl_reboot_for_firmware"]) != "false" || fmt.Sprint(d["rocectl_firmware_reboot_batch"]) != "1" {
		t.Errorf("defaults: reboot %v, batch %v", d["rocectl_reboot_for_firmware"], d["rocectl_firmware_reboot_batch"])
	}
	var reboot map[string]any
	hs, _ := docs[handlers].([]any)
	for _, h := range hs {
		m, _ := h.(map[string]any)
		if _, ok := m["ansible.builtin.reboot"]; ok {
			if reboot != nil {
				t.Errorf("two reboot handlers")
			}
			reboot = m
		}
	}
	if reboot == nil {
		t.Fatal("no reboot handler")
	}
	if reboot["name"] != "Reboot for pending firmware changes" || reboot["throttle"] != "{{ rocectl_firmware_reboot_batch }}" {
		t.Errorf("handler %v", reboot)
	}
	when := fmt.Sprint(reboot["when"])
	if !strings.Contains(when, "rocectl_reboot_for_firmware | bool") || !strings.Contains(when, "not ansible_check_mode") {
		t.Errorf("handler when %s", when)
	}
	found := false
	ts, _ := docs[tasks].([]any)
	for _, x := range ts {
		m, _ := x.(map[string]any)
		if m["notify"] == "Reboot for pending firmware changes" {
			found = true
			if w := fmt.Sprint(m["when"]); !strings.Contains(w, "rocectl_apply_doc.pending") || !strings.Contains(w, "rocectl_audit_doc.pending") {
				t.Errorf("notifying task when %s", w)
			}
			if fmt.Sprint(m["changed_when"]) != "rocectl_reboot_for_firmware | bool" {
				t.Errorf("notifying task changed_when %v: a handler runs only on changed", m["changed_when"])
			}
		}
	}
	if !found {
		t.Error("no task notifies the reboot handler")
	}
}
