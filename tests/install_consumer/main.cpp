// Reads a matrix and prints how sparsejit would run SpMM on it (K = 32, f32): the plan and the
// compiled kernel need no GPU. Built against the installed package only.
#include <iostream>

#include <sparsejit/error.hpp>
#include <sparsejit/io.hpp>
#include <sparsejit/runtime.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer MATRIX\n";
    return 2;
  }
  try {
    const auto a = sparsejit::io::read_csr<float>(argv[1]);
    const sparsejit::Decision decision = sparsejit::explain_spmm(a.pattern(), 32, sparsejit::DType::F32);
    std::cout << sparsejit::describe(decision);
  } catch (const sparsejit::Error& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
