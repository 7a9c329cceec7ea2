# Sourced by bench scripts: a throwaway redis-server per phase, with the bench settings (loopback,
# no persistence), stopped and its directory removed when the script exits.
#   start_redis NAME   starts one in $dir/NAME; sets $port and $redis_pid
#   stop_redis         stops the running one (if any)
dir=$(mktemp -d)
redis_pid=""
stop_redis() {
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
    redis_pid=""
  fi
}
trap 'stop_redis; rm -rf "$dir"' EXIT
start_redis() {
  mkdir -p "$dir/$1"
  port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/$1" --save '' --appendonly no \
    --daemonize yes --logfile "$dir/$1/redis.log" --pidfile "$dir/$1/redis.pid"
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis_pid=$(cat "$dir/$1/redis.pid")
}
