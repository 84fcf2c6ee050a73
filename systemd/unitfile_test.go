package systemd

// A small reader for the subset of systemd's unit-file and environment-file
// syntax the shipped files use (systemd.syntax(7), systemd.exec(5)
// "Environment variables in spawned processes", systemd.service(5)
// "Command lines"). It is strict where the real parser is lenient, so that a
// unit that only works by accident fails here.

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

type entry struct {
	key, value string
	line       int
}

type section struct {
	name    string
	line    int
	entries []entry
}

type unitFile struct {
	path     string
	sections []*section
}

// parseUnit reads an INI-style unit file: [Section] headers, Key=Value
// lines, '#' and ';' comments, and lines continued with a trailing
// backslash (joined with a space, as systemd does).
func parseUnit(path string) (*unitFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	u := &unitFile{path: path}
	var cur *section
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSpace(lines[i])
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s:%d: malformed section header %q", path, n, line)
			}
			cur = &section{name: line[1 : len(line)-1], line: n}
			u.sections = append(u.sections, cur)
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("%s:%d: assignment outside a section: %q", path, n, line)
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: not a Key=Value line: %q", path, n, line)
		}
		k = strings.TrimSpace(k)
		if k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("%s:%d: bad key %q", path, n, k)
		}
		cur.entries = append(cur.entries, entry{key: k, value: strings.TrimSpace(v), line: n})
	}
	return u, nil
}

// section returns the named section, or nil.
func (u *unitFile) section(name string) *section {
	for _, s := range u.sections {
		if s.name == name {
			return s
		}
	}
	return nil
}

// values returns every value of key in the section, in file order.
func (u *unitFile) values(sec, key string) []string {
	s := u.section(sec)
	if s == nil {
		return nil
	}
	var out []string
	for _, e := range s.entries {
		if e.key == key {
			out = append(out, e.value)
		}
	}
	return out
}

// value returns the last value of key (the one that wins for single-valued
// settings) and whether the key is set at all.
func (u *unitFile) value(sec, key string) (string, bool) {
	v := u.values(sec, key)
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// list returns the space-separated items of every value of a list-valued
// key (After=, Wants=, CapabilityBoundingSet=, ...), merged.
func (u *unitFile) list(sec, key string) []string {
	var out []string
	for _, v := range u.values(sec, key) {
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// splitQuoted splits at whitespace, honouring double and single quotes and
// backslash escapes inside double quotes: the word splitting of command
// lines and of Environment= assignments.
func splitQuoted(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
				continue
			}
			if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				c = s[i]
			}
			b.WriteByte(c)
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		out = append(out, b.String())
	}
	return out, nil
}

// environment returns the variables the unit's Environment= lines set
// (later assignments win), the way systemd.exec(5) reads them.
func (u *unitFile) environment() (map[string]string, error) {
	env := map[string]string{}
	for _, v := range u.values("Service", "Environment") {
		words, err := splitQuoted(v)
		if err != nil {
			return nil, err
		}
		for _, w := range words {
			k, val, ok := strings.Cut(w, "=")
			if !ok {
				return nil, fmt.Errorf("Environment=%s: %q is not NAME=VALUE", v, w)
			}
			env[k] = val
		}
	}
	return env, nil
}

// parseEnvFile reads an EnvironmentFile=: KEY=VALUE lines, '#'/';'
// comments, values optionally in double or single quotes.
func parseEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("%s:%d: not KEY=VALUE: %q", path, n, line)
		}
		words, err := splitQuoted(v)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if len(words) > 1 {
			return nil, fmt.Errorf("%s:%d: a value with spaces must be quoted: %q", path, n, line)
		}
		env[k] = strings.Join(words, "")
	}
	return env, sc.Err()
}

// expandCommand turns an Exec*= line into argv as systemd.service(5)
// describes: "${NAME}" is replaced inside its word and keeps it one word;
// a word that is exactly "$NAME" is replaced by the value split at
// whitespace (zero words when empty or unset). Prefixes such as '-' or '@'
// are not used by the shipped units and are refused.
func expandCommand(line string, env map[string]string) ([]string, error) {
	if line != "" && strings.ContainsRune("-@:+!", rune(line[0])) {
		return nil, fmt.Errorf("command prefix %q is not handled here", line[0])
	}
	words, err := splitQuoted(line)
	if err != nil {
		return nil, err
	}
	var argv []string
	for _, w := range words {
		if name, ok := strings.CutPrefix(w, "$"); ok && isVarName(name) {
			argv = append(argv, strings.Fields(env[name])...)
			continue
		}
		var b strings.Builder
		for {
			i := strings.Index(w, "${")
			if i < 0 {
				b.WriteString(w)
				break
			}
			j := strings.IndexByte(w[i:], '}')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ${ in %q", w)
			}
			b.WriteString(w[:i])
			b.WriteString(env[w[i+2:i+j]])
			w = w[i+j+1:]
		}
		argv = append(argv, b.String())
	}
	return argv, nil
}

func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// braceVars lists the ${NAME} references of a command line.
func braceVars(line string) []string {
	var out []string
	for {
		i := strings.Index(line, "${")
		if i < 0 {
			return out
		}
		j := strings.IndexByte(line[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, line[i+2:i+j])
		line = line[i+j+1:]
	}
}
