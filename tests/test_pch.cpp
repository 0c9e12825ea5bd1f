// The donor of the test binaries' shared precompiled header (tests/CMakeLists.txt): this file only
// gives the header a target to be built in.
