package report

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// docs/schema/fleet.json lists exactly Fleet's top-level fields, as package
// doc's test checks for the other documents.
func TestFleetSchemaListsTheFields(t *testing.T) {
	b, err := os.ReadFile("../docs/schema/fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b, &sch); err != nil {
		t.Fatal(err)
	}
	var fields []string
	typ := reflect.TypeOf(Fleet{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
		if _, ok := sch.Properties[name]; !ok {
			t.Errorf("fleet.json lacks %q", name)
		}
	}
	for p := range sch.Properties {
		if !slices.Contains(fields, p) {
			t.Errorf("fleet.json has %q, which Fleet does not", p)
		}
	}
}
