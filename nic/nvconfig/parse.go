package nvconfig

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Limits on what Parse accepts: the largest real query (a ConnectX-7 with
// -e) is about 40 KiB and 400 settings.
const (
	MaxOutput   = 1 << 20
	MaxLine     = 4096
	MaxSettings = 4096
)

var (
	// ErrFormat: the output is not a query table rocectl knows.
	ErrFormat = errors.New("unexpected mstconfig output")
	// ErrTool: the tool printed an error (-E- ...); ToolError says which.
	ErrTool = errors.New("mstconfig reported an error")
	// ErrUnknownParam: the firmware does not know (or hides) a setting.
	ErrUnknownParam = errors.New("parameter unknown to this firmware")
	// ErrNotShown: the query did not show that state (no -e: no default or current).
	ErrNotShown = errors.New("state not shown by this query")
	// ErrNotConnectX: the device is not a ConnectX (or BlueField) NIC.
	ErrNotConnectX = errors.New("device is not a ConnectX")
)

// Column is one value column of the table.
type Column string

const (
	Default  Column = "Default"
	Current  Column = "Current"
	NextBoot Column = "Next Boot"
	New      Column = "New" // a set's preview, never a state
)

// Value is one cell: Raw as printed, Num when it carries a number
// (255, True(1), DEVICE_DEFAULT(0)), NA when the firmware returned none.
type Value struct {
	Raw    string
	Num    uint64
	HasNum bool
	NA     bool
}

func parseValue(s string) Value {
	v := Value{Raw: s}
	if s == "N/A" {
		v.NA = true
		return v
	}
	num := s
	if i := strings.LastIndexByte(s, '('); i > 0 && strings.HasSuffix(s, ")") {
		num = s[i+1 : len(s)-1]
	}
	if n, err := strconv.ParseUint(num, 10, 64); err == nil {
		v.Num, v.HasNum = n, true
	}
	return v
}

// Setting is one row: the three states (a state not shown has Shown false).
type Setting struct {
	Name     string
	Default  Value
	Current  Value
	Next     Value
	Shown    map[Column]bool
	Modified bool // the tool's '*': next differs from default or current
	ReadOnly bool // the tool's 'RO'
}

// Pending reports whether the next-boot value differs from the current one
// (a write that takes effect at the next firmware reset or reboot).
func (s Setting) Pending() (bool, error) {
	if !s.Shown[Current] {
		return false, fmt.Errorf("%s: current value: %w", s.Name, ErrNotShown)
	}
	return s.Current.Raw != s.Next.Raw, nil
}

// Device is the block the query prints before its table.
type Device struct {
	Type, Name, Description, Address string
}

// IsConnectX reports whether the device type is a ConnectX or a BlueField
// (whose NIC is a ConnectX); mstconfig also drives switches and old HCAs.
func (d Device) IsConnectX() bool {
	return strings.HasPrefix(d.Type, "ConnectX") || strings.HasPrefix(d.Type, "BlueField")
}

// Query is one device's parsed query.
type Query struct {
	Device   Device
	Columns  []Column
	Settings []Setting
	byName   map[string]int
}

// Get returns a setting by name; ErrUnknownParam when the firmware did not
// list it.
func (q *Query) Get(name string) (Setting, error) {
	if i, ok := q.byName[name]; ok {
		return q.Settings[i], nil
	}
	return Setting{}, fmt.Errorf("%s: %w", name, ErrUnknownParam)
}

// ToolError is an "-E- message" the tool printed.
type ToolError struct{ Msg string }

func (e *ToolError) Error() string {
	// The tool's words, then what rocectl makes of them: "Failed to open
	// the device" alone does not say that kernel lockdown is a cause.
	if errs := e.Unwrap(); len(errs) > 1 {
		return "mstconfig: " + e.Msg + " (" + errs[1].Error() + ")"
	}
	return "mstconfig: " + e.Msg
}

// Unwrap classifies the message by the strings mstflint's source prints.
func (e *ToolError) Unwrap() []error {
	errs := []error{ErrTool}
	m := e.Msg
	switch {
	case strings.Contains(m, "Unknown Parameter"), strings.Contains(m, "Unknown parameter"):
		errs = append(errs, ErrUnknownParam)
	case strings.Contains(m, "Semaphore locked"), strings.Contains(m, "SEMAPHORE"), strings.Contains(m, "busy"):
		errs = append(errs, ErrBusy)
	case strings.Contains(m, "Failed to open the device"):
		errs = append(errs, ErrAccess)
	case strings.Contains(m, "Unsupported device"), strings.Contains(m, "Livefish"), strings.Contains(m, "doesn't support any configuration"):
		errs = append(errs, ErrNotConnectX)
	}
	return errs
}

// Parse reads one device's query output (mstconfig/mlxconfig q, with or
// without -e, or a set's preview). An "-E-" line is returned as a
// *ToolError, with whatever settings came before it.
func Parse(out []byte) (*Query, error) {
	if len(out) > MaxOutput {
		return nil, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrFormat, len(out), MaxOutput)
	}
	q := &Query{byName: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 512), MaxLine)
	lineNo := 0
	inTable, ended := false, false
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), " \t\r")
		if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "-E-"); ok {
			return q, &ToolError{Msg: strings.TrimSpace(msg)}
		}
		switch {
		case strings.HasPrefix(line, "Configurations:"):
			if q.Columns != nil {
				return nil, fmt.Errorf("%w: line %d: a second table (one device per query)", ErrFormat, lineNo)
			}
			cols, err := parseHeader(strings.TrimPrefix(line, "Configurations:"))
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, lineNo, err)
			}
			q.Columns, inTable = cols, true
		case inTable && !ended && line != "" && (line[0] == ' ' || line[0] == '*'):
			s, err := parseRow(line, q.Columns)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, lineNo, err)
			}
			if _, dup := q.byName[s.Name]; dup {
				return nil, fmt.Errorf("%w: line %d: %s listed twice", ErrFormat, lineNo, s.Name)
			}
			if len(q.Settings) >= MaxSettings {
				return nil, fmt.Errorf("%w: over %d settings", ErrFormat, MaxSettings)
			}
			q.byName[s.Name] = len(q.Settings)
			q.Settings = append(q.Settings, s)
		case inTable:
			ended = true
		default:
			if k, v, ok := strings.Cut(line, ":"); ok {
				v = strings.TrimSpace(v)
				switch strings.TrimSpace(k) {
				case "Device type":
					q.Device.Type = v
				case "Name":
					q.Device.Name = v
				case "Description":
					q.Device.Description = v
				case "Device":
					q.Device.Address = v
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, lineNo+1, err)
	}
	if q.Columns == nil {
		return nil, fmt.Errorf("%w: no \"Configurations:\" table", ErrFormat)
	}
	if q.Device.Type != "" && !q.Device.IsConnectX() {
		return q, fmt.Errorf("device type %q: %w", q.Device.Type, ErrNotConnectX)
	}
	return q, nil
}

func parseHeader(s string) ([]Column, error) {
	var cols []Column
	rest := strings.TrimSpace(s)
	for rest != "" {
		var c Column
		switch {
		case strings.HasPrefix(rest, string(Default)):
			c = Default
		case strings.HasPrefix(rest, string(Current)):
			c = Current
		case strings.HasPrefix(rest, string(NextBoot)):
			c = NextBoot
		case strings.HasPrefix(rest, string(New)):
			c = New
		default:
			return nil, fmt.Errorf("unknown column %q", rest)
		}
		for _, have := range cols {
			if have == c {
				return nil, fmt.Errorf("column %q twice", c)
			}
		}
		cols = append(cols, c)
		rest = strings.TrimSpace(strings.TrimPrefix(rest, string(c)))
	}
	// mlxcfg_ui.cpp labels a lone next-boot column "Default" on a set with
	// defaults; as a query it is always Next Boot.
	if len(cols) == 1 && cols[0] == Default {
		cols[0] = NextBoot
	}
	next := false
	for _, c := range cols {
		next = next || c == NextBoot
	}
	if !next {
		return nil, errors.New("no Next Boot column")
	}
	return cols, nil
}

func parseRow(line string, cols []Column) (Setting, error) {
	s := Setting{Shown: map[Column]bool{}}
	// printSingleParam: diff mark ('*' or ' '), then "RO" or two spaces.
	s.Modified = line[0] == '*'
	line = line[1:]
	if r, ok := strings.CutPrefix(line, "RO"); ok {
		s.ReadOnly = true
		line = r
	}
	f := strings.Fields(line)
	if len(f) != 1+len(cols) {
		return s, fmt.Errorf("%d fields, want a name and %d values", len(f), len(cols))
	}
	s.Name = f[0]
	if !validName(s.Name) {
		return s, fmt.Errorf("setting name %q", s.Name)
	}
	for i, c := range cols {
		v := parseValue(f[1+i])
		switch c {
		case Default:
			s.Default = v
		case Current:
			s.Current = v
		case NextBoot:
			s.Next = v
		case New:
			continue
		}
		s.Shown[c] = true
	}
	return s, nil
}

func validName(n string) bool {
	for _, r := range n {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '[' || r == ']' || r == '.') {
			return false
		}
	}
	return n != ""
}
