// ResNet-50 (torchvision v1.5: stride on the 3x3 conv of the bottleneck), evaluation-mode
// BatchNormalization as exported (running statistics are listed with the parameters, as
// the exporter stores them as initializers).
#include <cmath>
#include <string>
#include <vector>

#include "onnx_models/families.h"

namespace symtensor::models {

namespace {

std::string conv(GraphBuilder& g, const std::string& x, const std::string& module, int64_t in, int64_t out,
                 int64_t kernel, int64_t stride) {
  const int64_t pad = kernel / 2;
  const double bound = std::sqrt(6.0 / static_cast<double>(in * kernel * kernel));  // keeps ReLU nets in range
  std::string w = g.parameter(module + ".weight", {out, in, kernel, kernel}, Init::uniform(bound));
  return g.op("Conv", {x, w},
              {{"kernel_shape", std::vector<int64_t>{kernel, kernel}},
               {"strides", std::vector<int64_t>{stride, stride}},
               {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
               {"dilations", std::vector<int64_t>{1, 1}},
               {"group", int64_t{1}}});
}

std::string batch_norm(GraphBuilder& g, const std::string& x, const std::string& module, int64_t channels) {
  std::string scale = g.parameter(module + ".weight", {channels}, Init::around(1.0, 0.1));
  std::string bias = g.parameter(module + ".bias", {channels}, Init::uniform(0.1));
  std::string mean = g.parameter(module + ".running_mean", {channels}, Init::uniform(0.1));
  std::string var = g.parameter(module + ".running_var", {channels}, Init::around(1.0, 0.1));
  return g.op("BatchNormalization", {x, scale, bias, mean, var},
              {{"epsilon", 1e-5f}, {"momentum", 0.9f}});
}

std::string bottleneck(GraphBuilder& g, const std::string& x, int64_t in, int64_t width, int64_t stride) {
  const int64_t out = width * 4;
  std::string y = g.op("Relu", {batch_norm(g, conv(g, x, "conv1", in, width, 1, 1), "bn1", width)});
  y = g.op("Relu", {batch_norm(g, conv(g, y, "conv2", width, width, 3, stride), "bn2", width)});
  y = batch_norm(g, conv(g, y, "conv3", width, out, 1, 1), "bn3", out);
  std::string shortcut = x;
  if (stride != 1 || in != out)
    shortcut = batch_norm(g, conv(g, x, "downsample.0", in, out, 1, stride), "downsample.1", out);
  return g.op("Relu", {g.op("Add", {y, shortcut})});
}

}  // namespace

void build_resnet(GraphBuilder& g, const ModelConfig& c) {
  const int64_t base = c.resnet_width;
  std::string x = g.input("input", onnx::TensorProto::FLOAT, {"batch", 3, c.image_size, c.image_size});
  x = g.op("Relu", {batch_norm(g, conv(g, x, "conv1", 3, base, 7, 2), "bn1", base)});
  x = g.op("MaxPool", {x}, {{"kernel_shape", std::vector<int64_t>{3, 3}},
                            {"strides", std::vector<int64_t>{2, 2}},
                            {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                            {"ceil_mode", int64_t{0}},
                            {"dilations", std::vector<int64_t>{1, 1}}});
  int64_t channels = base;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = base << stage;
    for (int64_t block = 0; block < c.resnet_blocks[stage]; ++block) {
      g.push("layer" + std::to_string(stage + 1) + "." + std::to_string(block));
      x = bottleneck(g, x, channels, width, block == 0 && stage > 0 ? 2 : 1);
      channels = width * 4;
      g.pop();
    }
  }
  x = g.op("GlobalAveragePool", {x});
  x = g.op("Flatten", {x}, {{"axis", int64_t{1}}});
  const double bound = 1.0 / std::sqrt(static_cast<double>(channels));
  std::string w = g.parameter("fc.weight", {c.classes, channels}, Init::uniform(bound));
  std::string b = g.parameter("fc.bias", {c.classes}, Init::uniform(bound));
  x = g.op("Gemm", {x, w, b}, {{"alpha", 1.0f}, {"beta", 1.0f}, {"transB", int64_t{1}}});
  g.output(x, "output", onnx::TensorProto::FLOAT, {"batch", c.classes});
}

}  // namespace symtensor::models
