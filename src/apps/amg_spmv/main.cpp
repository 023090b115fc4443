#include "common/app_main.hpp"

int main(int argc, char** argv) {
  return sparsecomm::apps::run_app(argc, argv, sparsecomm::apps::amg_main, "sparsecomm_amg_spmv");
}
