#!/bin/bash
# Guest side of tests/vm/test_package.py, under systemd as PID 1
# (run-in-vm --systemd): installs the Debian package, lets its postinst start
# the service, reads what the service's hardening makes of the process,
# scrapes it, reloads it, purges the package and lists what is left.
#
# Usage (inside the VM): package-guest.sh DEB RXE_UP
# Writes to $RESULTS: steps.log, facts.txt ("key value" lines), metrics.txt,
# show.txt (systemctl show), status.txt (/proc/<pid>/status), security.txt
# (systemd-analyze security), dpkg-*.log, journal.txt, leftovers.txt.
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
usage="usage: package-guest.sh DEB RXE_UP"
DEB=${1:?$usage}
RXE_UP=${2:?$usage}
UNIT=rdma_exporter.service
: "${RESULTS:?RESULTS must name the results directory}"
R=$RESULTS
PROG=package-guest
# shellcheck source=guest-lib.sh
source "$HERE/guest-lib.sh"

: >"$R/steps.log"
: >"$R/facts.txt"
fact() { echo "$1 $2" >>"$R/facts.txt"; }

fact pid1 "$(cat /proc/1/comm)"
[[ $(cat /proc/1/comm) == systemd ]] || die "PID 1 is not systemd (run-in-vm --systemd)"
t 120 "$RXE_UP" >"$R/rxe-up.log" 2>&1 || die "rxe-up failed (see rxe-up.log)"
note "rxe0 up"

# The host's root may carry a policy-rc.d that forbids starting services (as
# container images do); this VM is a whole system, so it goes (from the
# overlay only) and the package's postinst starts the service as it would on
# a host.
if [[ -e /usr/sbin/policy-rc.d ]]; then
	rm /usr/sbin/policy-rc.d
	fact policy_rc_d removed
fi

# What the overlay holds before the package: files only (directories are
# copied up by any change below them), without the paths that change on
# their own or with every dpkg run (/var/backups: the daily
# dpkg-db-backup timer may fire while the guest runs).
upper=/run/rdma-vm-overlay/upper
changed_files() {
	(cd "$upper" && find . \( -path ./var/log -o -path ./var/cache -o -path ./var/lib/dpkg \
		-o -path ./var/backups -o -path ./tmp -o -path ./root \) -prune -o ! -type d -print) | LC_ALL=C sort
}
changed_files >"$R/upper-before.txt"
accounts="passwd group shadow gshadow subuid subgid"
mkdir -p /run/accounts
for f in $accounts; do
	if [[ -e /etc/$f ]]; then cp "/etc/$f" /run/accounts/; fi
done
fact user_before "$(getent passwd rdma_exporter >/dev/null && echo present || echo absent)"

t 300 dpkg -i "$DEB" >"$R/dpkg-install.log" 2>&1 || die "dpkg -i failed (see dpkg-install.log)"
note "installed"
fact user "$(getent passwd rdma_exporter | cut -d: -f1,6,7)"
fact group "$(getent group rdma_exporter | cut -d: -f1)"
fact enabled "$(systemctl is-enabled "$UNIT" || true)"
fact man "$(man -w rdma_exporter 2>/dev/null || echo none)"
fact conffile "$(dpkg-query -W -f='${Conffiles}' rdma-exporter | awk '{print $1}' | tr '\n' ' ')"

# postinst started the service.
deadline=$((SECONDS + 120))
until [[ $(systemctl is-active "$UNIT" || true) == active ]] &&
	t 10 curl -sf -o /dev/null http://127.0.0.1:10910/healthz; do
	((SECONDS < deadline)) || {
		systemctl status "$UNIT" >"$R/status-failed.txt" 2>&1 || true
		die "the service is not answering within 120s"
	}
	sleep 0.5
done
note "service active and answering"
t 60 curl -sf http://127.0.0.1:10910/metrics >"$R/metrics.txt" || die "scrape failed"

systemctl show "$UNIT" >"$R/show.txt"
pid=$(systemctl show -P MainPID "$UNIT")
fact main_comm "$(cat "/proc/$pid/comm")"
cp "/proc/$pid/status" "$R/status.txt"
fact proc_user "$(stat -c %U "/proc/$pid")"
# ProtectSystem=strict and ProtectHome: the service's mount namespace.
if nsenter -t "$pid" -m -- touch /usr/lib/rdma-exporter-write-test 2>"$R/write-usr.err"; then
	fact write_usr allowed
else
	fact write_usr denied
fi
if nsenter -t "$pid" -m -- touch /etc/rdma_exporter/write-test 2>/dev/null; then
	fact write_etc allowed
else
	fact write_etc denied
fi
fact home_entries "$(nsenter -t "$pid" -m -- find /root /home -mindepth 1 2>/dev/null | wc -l)"
fact tmp_private "$([[ $(stat -L -c %i /tmp) != $(nsenter -t "$pid" -m -- stat -L -c %i /tmp) ]] && echo yes || echo no)"
t 120 systemd-analyze security "$UNIT" --no-pager >"$R/security.txt" 2>&1 || true

# OTLP on, pushing to a receiver in the guest that answers: the unit is
# Type=notify, so systemd kills a service that never says READY=1 when its
# start timeout runs out. The drop-in shortens that timeout to 15 s and the
# configuration turns the push on; 25 s after the restart the service must
# be active, never restarted, and the receiver must have taken pushes.
OTLP_STATS=/run/rdma-otlp-sink.json
timeout --kill-after=5 600 python3 "$HERE/otlp_sink.py" --listen 127.0.0.1:4318 \
	--stats "$OTLP_STATS" >"$R/otlp-sink.log" 2>&1 &
sink=$!
wait_listen 4318 30 || die "the OTLP receiver did not listen"
mkdir -p "/etc/systemd/system/$UNIT.d"
printf '[Service]\nTimeoutStartSec=15s\n' >"/etc/systemd/system/$UNIT.d/start-timeout.conf"
cp /etc/rdma_exporter/rdma_exporter.yml /run/rdma_exporter.yml.orig
printf 'otlp: {enabled: true, endpoint: "http://127.0.0.1:4318/v1/metrics", interval: 1s}\n' \
	>/etc/rdma_exporter/rdma_exporter.yml
systemctl daemon-reload
t 60 systemctl restart --no-block "$UNIT" || die "systemctl restart failed"
otlp_pid_before=$(systemctl show -P MainPID "$UNIT")
sleep 25
fact otlp_active "$(systemctl is-active "$UNIT" || true)"
fact otlp_restarts "$(systemctl show -P NRestarts "$UNIT")"
fact otlp_result "$(systemctl show -P Result "$UNIT")"
fact otlp_same_pid "$([[ $(systemctl show -P MainPID "$UNIT") == "$otlp_pid_before" ]] && echo same || echo changed)"
fact otlp_requests "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$OTLP_STATS" 2>/dev/null || echo 0)"
t 10 curl -sf http://127.0.0.1:10910/metrics >"$R/metrics-otlp.txt" || true
journalctl -u "$UNIT" --no-pager -o cat >"$R/journal-otlp.txt" 2>&1 || true
kill "$sink" 2>/dev/null || true
wait "$sink" 2>/dev/null || true
cp /run/rdma_exporter.yml.orig /etc/rdma_exporter/rdma_exporter.yml
rm -r "/etc/systemd/system/$UNIT.d"
systemctl daemon-reload
t 120 systemctl restart "$UNIT" || die "restarting without OTLP failed"
pid=$(systemctl show -P MainPID "$UNIT")
note "OTLP phase done"

# SIGHUP through the unit's ExecReload: the same process, still answering.
t 60 systemctl reload "$UNIT" || die "systemctl reload failed"
sleep 1
fact pid_after_reload "$([[ $(systemctl show -P MainPID "$UNIT") == "$pid" ]] && echo same || echo changed)"
t 30 curl -sf -o /dev/null http://127.0.0.1:10910/healthz && fact healthz_after_reload ok ||
	fact healthz_after_reload failed
journalctl -u "$UNIT" --no-pager -o cat >"$R/journal.txt" 2>&1 || true

t 300 dpkg --purge rdma-exporter >"$R/dpkg-purge.log" 2>&1 || die "dpkg --purge failed (see dpkg-purge.log)"
note "purged"
systemctl daemon-reload
fact dpkg_knows "$(dpkg -s rdma-exporter >/dev/null 2>&1 && echo yes || echo no)"
fact process "$(pgrep -x rdma_exporter >/dev/null && echo running || echo none)"
fact unit_files "$(systemctl list-unit-files --no-legend "$UNIT" | wc -l)"
fact unit_load "$(systemctl show -P LoadState "$UNIT")"
fact user_after "$(getent passwd rdma_exporter >/dev/null && echo present || echo absent)"
fact group_after "$(getent group rdma_exporter >/dev/null && echo present || echo absent)"
unchanged=""
for f in $accounts; do
	if [[ ! -e /run/accounts/$f ]]; then
		[[ -e /etc/$f ]] && fact "accounts_$f" created || fact "accounts_$f" unchanged
	elif cmp -s "/etc/$f" "/run/accounts/$f"; then
		fact "accounts_$f" unchanged
		unchanged+="|$f"
	else
		fact "accounts_$f" changed
	fi
done
changed_files >"$R/upper-after.txt"
# Files that the install and purge left: new in the overlay, minus the
# account files (copied up by useradd and userdel; their contents are
# compared above) and the shadow tools' backups and lock.
comm -13 "$R/upper-before.txt" "$R/upper-after.txt" |
	grep -v -E "^\./etc/(${unchanged#|})\$|^\./etc/(passwd|group|shadow|gshadow|subuid|subgid)-\$|^\./etc/\.pwd\.lock\$" \
		>"$R/leftovers.txt" || true
for path in /usr/bin/rdma_exporter /etc/rdma_exporter /lib/systemd/system/$UNIT \
	/usr/lib/sysusers.d/rdma_exporter.conf /usr/share/doc/rdma-exporter \
	/usr/share/doc/rdma_exporter /usr/share/rdma_exporter /usr/share/man/man8/rdma_exporter.8.gz \
	/etc/systemd/system/multi-user.target.wants/$UNIT; do
	[[ -e $path || -L $path ]] && echo "$path" >>"$R/leftovers.txt"
done
note "done"
