#pragma once
// The compressors' constructors, one family per file; make_compressor (registry.cpp) checks the
// parameters and picks one by name.
#include <memory>

#include "collectives/compress/compressor.hpp"

namespace sb {

std::unique_ptr<Compressor> make_none_compressor();                              // dense_compressors.cpp
std::unique_ptr<Compressor> make_fp16_compressor();
std::unique_ptr<Compressor> make_bf16_compressor();
std::unique_ptr<Compressor> make_topk_compressor(const CompressorParams& params);  // sparse_compressors.cpp
std::unique_ptr<Compressor> make_threshold_compressor(const CompressorParams& params);
std::unique_ptr<Compressor> make_randomk_compressor(const CompressorParams& params);
std::unique_ptr<Compressor> make_sign_compressor();                                // quantised_compressors.cpp
std::unique_ptr<Compressor> make_efsign_compressor();
std::unique_ptr<Compressor> make_onebit_compressor();
std::unique_ptr<Compressor> make_qsgd_compressor(const CompressorParams& params);
std::unique_ptr<Compressor> make_terngrad_compressor(const CompressorParams& params);
std::unique_ptr<Compressor> make_powersgd_compressor(const CompressorParams& params);  // lowrank_compressors.cpp

}  // namespace sb
