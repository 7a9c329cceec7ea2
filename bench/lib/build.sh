# Sourced by the bench scripts (from the repository root): unless BUILD_DIR names a build to use,
# sets the machine up (scripts/setup.sh) and makes the release build, then uses build/release.
if [ -z "${BUILD_DIR:-}" ]; then
  scripts/setup.sh >/dev/null
  scripts/build.sh release >/dev/null
  BUILD_DIR=build/release
fi
