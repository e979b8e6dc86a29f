#!/bin/bash
ip -4 -o addr; ip route
echo hello-from-guest > /tmp/index.html
cd /tmp && timeout 25 python3 -m http.server --bind 10.0.2.15 18080 &
timeout 5 bash -c 'echo > /dev/tcp/10.0.2.2/22' && echo "OUTBOUND OPEN" || echo "outbound blocked"
wait
