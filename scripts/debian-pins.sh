# The Debian packages the interop tests and the benchmarks run, pinned once for both
# (sourced by scripts/python-interop.sh and bench/run.sh): Redis and nginx for the replicas,
# ripgrep and fd for the workspace (its search is checked against ripgrep's, and timed
# against both).
REDIS_PIN=redis-server=5:7.0.15-1~deb12u7
NGINX_PIN=nginx=1.22.1-9+deb12u7
RIPGREP_PIN=ripgrep=13.0.0-4+b2
FD_PIN=fd-find=8.6.0-3
