// Placeholder until loom-topo lands.
int main() { return 1; }
