package report

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// printable is text from a document (a host name, a setting, an error)
// made safe to print in a terminal, a table cell or a heading: a
// character that is not graphic (C0 and C1 controls and DEL, the line and
// paragraph separators, bidirectional and other format characters)
// becomes its Go escape (\n, \x1b, \u2028), and a byte that is not UTF-8
// becomes \xNN. A host named "gpu-1\n| evil |" or "\x1b]0;x\a" cannot
// split a row, start a heading or send the terminal an escape; every
// ordinary name is unchanged.
func printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == ' ' || strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (r != ' ' && !strconv.IsPrint(r)) {
			return false
		}
		i += size
	}
	return true
}

// printableLines is printable line by line: the newlines of a multi-line
// error stay, for the text view to indent.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}

func printableJoin(ss []string, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = printable(s)
	}
	return strings.Join(out, sep)
}
