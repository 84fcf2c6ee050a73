package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
)

// rocectl watch as a person uses it: in a real terminal (a tmux pane on
// a private tmux server), against the configured ConnectX-6 Dx snapshot.
// The test reads the screen the way the person would (capture-pane), and
// tmux's own view of the pane: whether it is on the alternate screen and
// whether the cursor shows. No sleeps stand in for synchronisation: every
// wait polls the pane until what it expects is there, within a bound.

// tmuxPane is one tmux session with a single pane running sh.
type tmuxPane struct {
	t     *testing.T
	sock  string
	marks int // commands run by shell
}

const tmuxWait = 15 * time.Second

func newTmuxPane(t *testing.T, cols, rows int) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install -y tmux, or make deps): the real-terminal test of rocectl watch needs it")
	}
	if bin == "" {
		t.Skip("no rocectl binary (no Go toolchain on PATH)")
	}
	// A private server (-S): the test never sees or touches anyone's
	// tmux sessions; -f /dev/null: no user configuration.
	p := &tmuxPane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	// dash, not bash: no line editor that would fix up a terminal mode
	// rocectl left behind. A fixed prompt, no startup files.
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows),
		"env", "-i", "PATH=/usr/bin:/bin", "TERM=screen", "PS1=watch-test$ ", "HOME="+t.TempDir(), "/bin/sh")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	p.waitScreen("the shell's first prompt", atPrompt)
	return p
}

// hasLine says whether one of the screen's lines is line.
func hasLine(screen, line string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// atPrompt says whether the shell waits at its prompt: the screen's last
// line with text is the bare prompt (capture-pane drops trailing blanks).
func atPrompt(screen string) bool {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return lines[len(lines)-1] == "watch-test$"
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start waits for the shell to be idle at its prompt, then types a
// command line and Enter, as keys (-l: literally). Typed ahead of the
// prompt, the kernel's echo would interleave with the shell's output.
func (p *tmuxPane) start(line string) {
	p.t.Helper()
	p.waitScreen("the shell's prompt", atPrompt)
	p.tmux("send-keys", "-t", "w", "-l", line)
	p.tmux("send-keys", "-t", "w", "Enter")
}

// shell runs a command line to its end: it waits for a marker the line
// prints last (computed by the shell, so that the echo of the typed line
// never matches it), then for the prompt, and returns the screen.
func (p *tmuxPane) shell(line string) string {
	p.t.Helper()
	p.marks++
	mark := "done-" + strconv.Itoa(p.marks)
	p.start(line + "; echo done-$((" + strconv.Itoa(p.marks) + "))")
	p.waitScreen(mark, func(s string) bool { return hasLine(s, mark) })
	return p.waitScreen("the shell's prompt", atPrompt)
}

func (p *tmuxPane) screen() string { return p.tmux("capture-pane", "-p", "-t", "w") }

// format is one of tmux's pane variables (#{alternate_on}, ...).
func (p *tmuxPane) format(f string) string {
	return strings.TrimSpace(p.tmux("display-message", "-p", "-t", "w", f))
}

// waitScreen polls the pane until ok holds, and returns the screen.
func (p *tmuxPane) waitScreen(what string, ok func(screen string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(tmuxWait)
	for {
		s := p.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting %s for %s; the screen:\n%s", tmuxWait, what, s)
		}
		time.Sleep(20 * time.Millisecond) // poll period
	}
}

// waitFormat polls a pane variable until it has want.
func (p *tmuxPane) waitFormat(f, want string) {
	p.t.Helper()
	deadline := time.Now().Add(tmuxWait)
	for {
		got := p.format(f)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting %s for %s = %s, have %s; the screen:\n%s", tmuxWait, f, want, got, p.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWatchInTerminal(t *testing.T) {
	p := newTmuxPane(t, 130, 30)
	state := filepath.Join(t.TempDir(), "stty")
	// The terminal's mode before, to compare with after each run.
	p.shell("stty -g > " + state)
	watch := bin + " --snapshot " + fixturehost.Dir("cx6dx-ofed-lossless") + " watch --interval 200ms"

	for _, quit := range []struct{ name, key string }{{"q", "q"}, {"Ctrl-C", "C-c"}} {
		t.Run(quit.name, func(t *testing.T) {
			p.t = t
			mark := "before-" + quit.key
			if !hasLine(p.shell("echo "+mark), mark) {
				t.Fatalf("the shell did not say %s:\n%s", mark, p.screen())
			}
			p.start(watch)
			wide := p.waitScreen("the wide table with both ports", func(s string) bool {
				return strings.Contains(s, "PORT            LINK  PRIO   RX PAUSE% RX PAUSE/s") &&
					strings.Contains(s, "ens1f0np0       up    port") && strings.Contains(s, "ens1f1np1       up    port")
			})
			for _, want := range []string{"rocectl watch  ", "(q quits)  all RoCE ports, snapshot ",
				"                      3            0.0          0       0.0          0        0"} {
				if !strings.Contains(wide, want) {
					t.Errorf("the screen lacks %q:\n%s", want, wide)
				}
			}
			if strings.Contains(wide, mark) {
				t.Errorf("the shell's screen shows through: not on the alternate screen?\n%s", wide)
			}
			p.waitFormat("#{alternate_on}", "1")
			p.waitFormat("#{cursor_flag}", "0")

			// Narrower than the table: SIGWINCH, and the two-line layout.
			p.tmux("resize-window", "-t", "w", "-x", "70", "-y", "14")
			narrow := p.waitScreen("the narrow layout", func(s string) bool {
				return strings.Contains(s, "ens1f0np0 up  cnp tx 0/s rx 0/s  ecn 0/s  disc 0/s  storm 0/0") &&
					strings.Contains(s, "  prio 3  rx   0.0%      0/s  tx   0.0%      0/s  disc 0/s")
			})
			if strings.Contains(narrow, "PORT ") {
				t.Errorf("the wide header is still there after the resize:\n%s", narrow)
			}
			for _, l := range strings.Split(narrow, "\n") {
				if len(l) > 70 {
					t.Errorf("a line wider than the window: %q", l)
				}
			}

			p.tmux("send-keys", "-t", "w", quit.key)
			p.waitFormat("#{alternate_on}", "0")
			p.waitFormat("#{cursor_flag}", "1")
			// The shell's own screen is back, and the terminal in the
			// mode it had: the shell echoes what is typed (cooked mode),
			// and stty says the same as before.
			after := p.shell("echo exit=$?; stty -g | cmp -s - " + state + " && echo tty-restored")
			// The shell's lines from before watch are there again (tput
			// rmcup's effect), followed by what was just typed.
			for _, want := range []string{mark, "exit=0", "tty-restored"} {
				if !hasLine(after, want) {
					t.Errorf("after %s the screen lacks %q:\n%s", quit.name, want, after)
				}
			}
			if strings.Contains(after, "PORT ") || strings.Contains(after, "cnp tx") {
				t.Errorf("watch's frame is left on the shell's screen:\n%s", after)
			}
			p.tmux("resize-window", "-t", "w", "-x", "130", "-y", "30")
			p.shell("clear")
		})
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatal(err)
	}
}
