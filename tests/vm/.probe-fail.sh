#!/bin/bash
echo "args: $*"
case "$1" in
exit) exit "$2" ;;
hang) sleep 1000 ;;
stuck) kill -STOP "$PPID"; sleep 1000 ;;
panic) echo c > /proc/sysrq-trigger ;;
esac
