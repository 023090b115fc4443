#include "common/app_main.hpp"

int main(int argc, char** argv) {
  return sparsecomm::apps::run_app(argc, argv, sparsecomm::apps::nbrbench_main, "sparsecomm_nbrbench");
}
