package systemd

// The directives the shipped units use, by section, each checked against
// the systemd man pages (systemd.unit(5), systemd.service(5),
// systemd.exec(5), systemd.kill(5), systemd.timer(5),
// systemd.resource-control(5)). A unit using anything
// else fails TestUnitsUseKnownDirectives: add it here only after reading its
// man page entry, with a note of what it does for rocectl. Every entry must
// be used by some unit (TestDirectiveListIsUsed), so the list stays the list
// of what is shipped, not a copy of the manual.
//
// Older systemd versions log "Unknown key" for the newer hardening settings
// (ProtectKernelLogs=, ProtectHostname=, RestrictSUIDSGID=, ...) and ignore
// them; the units still work there, with less isolation.

var knownDirectives = map[string]map[string]string{
	"Unit": {
		"Description":           "systemd.unit(5): human-readable name",
		"Documentation":         "systemd.unit(5): man pages of the unit (the package ships them; packaging's TestUnitDocumentationIsShipped)",
		"After":                 "systemd.unit(5): ordering (list, repeatable)",
		"Before":                "systemd.unit(5): ordering (list, repeatable)",
		"Wants":                 "systemd.unit(5): weak requirement (list, repeatable)",
		"Conflicts":             "systemd.unit(5): stopped when the listed unit starts (shutdown.target)",
		"DefaultDependencies":   "systemd.unit(5): no implicit sysinit/basic/shutdown dependencies (early-boot apply)",
		"StartLimitIntervalSec": "systemd.unit(5): start rate limit window",
		"StartLimitBurst":       "systemd.unit(5): starts allowed per window",
	},
	"Service": {
		"Type":                    "systemd.service(5): notify (agent), oneshot (apply, audit)",
		"NotifyAccess":            "systemd.service(5): only the main PID may send sd_notify messages",
		"RemainAfterExit":         "systemd.service(5): oneshot stays active after a successful run",
		"ExecStart":               "systemd.service(5): the command; ${VAR} and $VAR expansion",
		"Restart":                 "systemd.service(5): restart policy",
		"RestartSec":              "systemd.service(5): delay before a restart",
		"TimeoutStartSec":         "systemd.service(5): time until READY=1 / oneshot completion",
		"TimeoutStopSec":          "systemd.service(5): time from SIGTERM to SIGKILL",
		"WatchdogSec":             "systemd.service(5): WATCHDOG=1 deadline, WATCHDOG_USEC for the service",
		"Environment":             "systemd.exec(5): defaults of the ROCECTL_* variables",
		"EnvironmentFile":         "systemd.exec(5): '-' prefix: optional file; overrides Environment=",
		"LimitMEMLOCK":            "systemd.exec(5): RLIMIT_MEMLOCK (verbs memory registration)",
		"CapabilityBoundingSet":   "systemd.exec(5): capabilities the root process keeps",
		"NoNewPrivileges":         "systemd.exec(5): no privilege gain through execve",
		"ProtectSystem":           "systemd.exec(5): strict = read-only tree except /dev, /proc, /sys",
		"StateDirectory":          "systemd.exec(5): /var/lib/rocectl, created and writable",
		"StateDirectoryMode":      "systemd.exec(5): its mode",
		"ReadWritePaths":          "systemd.exec(5): writable exceptions under ProtectSystem=strict",
		"ProtectHome":             "systemd.exec(5): /home, /root, /run/user inaccessible",
		"PrivateMounts":           "systemd.exec(5): own mount namespace, no propagation towards the host (host mounts still propagate in)",
		"ProtectProc":             "systemd.exec(5): invisible = /proc shows only the unit user's processes (hidepid=)",
		"IPAddressDeny":           "systemd.resource-control(5): cgroup BPF IP filter; any = deny all IP traffic but what IPAddressAllow= lets through",
		"IPAddressAllow":          "systemd.resource-control(5): agent: localhost, for /metrics on 127.0.0.1 / ::1",
		"PrivateTmp":              "systemd.exec(5): private /tmp and /var/tmp",
		"ProtectKernelModules":    "systemd.exec(5): no module loading",
		"ProtectKernelLogs":       "systemd.exec(5): no kernel log ring buffer access",
		"ProtectKernelTunables":   "systemd.exec(5): read-only /sys and /proc/sys (audit only: it writes nothing)",
		"ProtectControlGroups":    "systemd.exec(5): read-only cgroup tree",
		"ProtectHostname":         "systemd.exec(5): no hostname changes",
		"RestrictAddressFamilies": "systemd.exec(5): socket families allowed",
		"RestrictNamespaces":      "systemd.exec(5): namespace types allowed (agent: net, for setns)",
		"RestrictRealtime":        "systemd.exec(5): no realtime scheduling",
		"RestrictSUIDSGID":        "systemd.exec(5): no set-user/group-ID files",
		"LockPersonality":         "systemd.exec(5): no personality(2) changes",
		"MemoryDenyWriteExecute":  "systemd.exec(5): no W+X mappings",
		"SystemCallArchitectures": "systemd.exec(5): native ABI only",
		"SystemCallFilter":        "systemd.exec(5): @system-service",
		"SystemCallErrorNumber":   "systemd.exec(5): errno for filtered calls instead of SIGSYS",
		"UMask":                   "systemd.exec(5): file creation mask",
	},
	"Timer": {
		"OnBootSec":          "systemd.timer(5): first run after boot",
		"OnUnitActiveSec":    "systemd.timer(5): period, from the last activation",
		"RandomizedDelaySec": "systemd.timer(5): spread across a fleet",
	},
	"Install": {
		"WantedBy": "systemd.unit(5): enable target",
	},
}

// sectionsFor is which sections a unit type may have (systemd.unit(5)).
var sectionsFor = map[string][]string{
	".service": {"Unit", "Service", "Install"},
	".timer":   {"Unit", "Timer", "Install"},
}

// repeatable keys may appear more than once; a repeated single-valued key
// silently overrides its first value, which is a mistake in a shipped unit.
var repeatable = map[string]bool{
	"After": true, "Before": true, "Wants": true, "Environment": true,
}
