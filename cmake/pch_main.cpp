// Carrier of the precompiled torch header for executables (see NnvmcHelpers.cmake).
int main() { return 0; }
