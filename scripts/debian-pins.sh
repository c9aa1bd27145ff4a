# The Debian packages the tests and the benchmarks run, pinned once for all of them (sourced
# by scripts/python-interop.sh and bench/run.sh): Redis and nginx for the replicas,
# Prometheus for the metrics interop, ripgrep and fd for the workspace (its search is
# checked against ripgrep's, and timed against both), wrk for the load. Each pin is the
# upstream version that matters; scripts/apt-install.sh installs the archive's current
# Debian revision of it (security updates replace revisions, never the upstream release).
REDIS_PIN=redis-server=7.0
NGINX_PIN=nginx=1.22
PROMETHEUS_PIN=prometheus=2.42
RIPGREP_PIN=ripgrep=13
FD_PIN=fd-find=8.6
WRK_PIN=wrk=4.1.0
