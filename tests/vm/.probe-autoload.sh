#!/bin/bash
set -x
modprobe veth; modprobe rdma_rxe
ip link add veth0 type veth peer name veth1; ip addr add 192.168.77.1/24 dev veth0; ip link set veth0 up; ip link set veth1 up
echo /sbin/modprobe > /proc/sys/kernel/modprobe
timeout 20 rdma link add rxe0 type rxe netdev veth0; echo "with /sbin/modprobe rc=$?"
lsmod | grep -i crc
echo "$1" > /proc/sys/kernel/modprobe
timeout 20 rdma link add rxe0 type rxe netdev veth0; echo "with $1 rc=$?"
lsmod | grep -i crc
dmesg | tail -5
