// Filled in below once the binary builds.
