# The Debian packages the replica tests and the replicas benchmark run, pinned once for both
# (sourced by scripts/python-interop.sh and bench/run.sh).
REDIS_PIN=redis-server=5:7.0.15-1~deb12u7
NGINX_PIN=nginx=1.22.1-9+deb12u7
