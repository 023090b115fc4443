// sparsecomm: one command-line tool for every job (the subcommands are in cli.cpp).
#include "cli/cli.hpp"

int main(int argc, char** argv) { return sparsecomm::apps::cli_main(argc, argv); }
