"""What torch calls are: heavy compute, other compute, creation, glue, in-place,
precision changes. Names are the last component of a resolved qualified name."""
from __future__ import annotations

HEAVY = frozenset("""
matmul mm bmm addmm addbmm baddbmm einsum linear bilinear conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d convolution scaled_dot_product_attention
tensordot cdist chain_matmul multi_dot lstm gru rnn_tanh rnn_relu multi_head_attention_forward
Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LSTM GRU RNN
MultiheadAttention Transformer TransformerEncoderLayer TransformerDecoderLayer _convolution
cudnn_convolution addmv mv dot vdot inner outer ger kron
""".split())

COMPUTE = frozenset("""
relu relu6 gelu silu mish elu selu celu leaky_relu prelu rrelu hardtanh hardsigmoid hardswish
softplus softsign softshrink hardshrink tanhshrink threshold glu logsigmoid sigmoid tanh
softmax log_softmax softmin exp exp2 expm1 log log2 log10 log1p sqrt rsqrt pow square abs neg
reciprocal sign sin cos tan erf erfc erfinv floor ceil round trunc frac clamp clip clamp_min clamp_max
add sub mul div true_divide floor_divide remainder fmod maximum minimum fmax fmin where lerp
addcmul addcdiv sum mean prod std var var_mean std_mean max min amax amin argmax argmin
median mode norm logsumexp cumsum cumprod cummax cummin topk sort argsort kthvalue all any
layer_norm batch_norm group_norm instance_norm local_response_norm rms_norm normalize dropout
dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout
max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d
adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d
lp_pool1d lp_pool2d interpolate upsample grid_sample pixel_shuffle embedding embedding_bag
cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss kl_div binary_cross_entropy
binary_cross_entropy_with_logits hinge_embedding_loss margin_ranking_loss triplet_margin_loss
cosine_embedding_loss cosine_similarity pairwise_distance soft_margin_loss multilabel_margin_loss
poisson_nll_loss gaussian_nll_loss ctc_loss diag triu tril trace cross fft ifft rfft irfft
ReLU ReLU6 GELU SiLU Mish ELU SELU CELU LeakyReLU PReLU Hardtanh Hardsigmoid Hardswish Softplus
Softsign Sigmoid Tanh Softmax LogSoftmax Softmin GLU LayerNorm BatchNorm1d BatchNorm2d BatchNorm3d
GroupNorm InstanceNorm1d InstanceNorm2d InstanceNorm3d RMSNorm LocalResponseNorm Dropout Dropout2d
Dropout3d MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d
AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool2d Upsample Embedding CrossEntropyLoss MSELoss
L1Loss SmoothL1Loss HuberLoss KLDivLoss NLLLoss BCELoss BCEWithLogitsLoss CosineSimilarity
TripletMarginLoss HingeEmbeddingLoss
""".split())

CREATE = frozenset("""
empty empty_like empty_strided zeros zeros_like ones ones_like full full_like tensor as_tensor
arange linspace logspace eye rand rand_like randn randn_like randint randint_like randperm
new_empty new_zeros new_ones new_full new_tensor from_numpy scalar_tensor
""".split())

UNINIT = frozenset("empty empty_like empty_strided new_empty".split())
CONSTANT_FILL = frozenset("zeros zeros_like ones ones_like full full_like new_zeros new_ones new_full tensor scalar_tensor new_tensor".split())

GLUE = frozenset("""
view view_as reshape reshape_as contiguous permute transpose t unsqueeze squeeze flatten unflatten
expand expand_as repeat pad to cuda cpu float double narrow split chunk cat concat stack size
dim stride data_ptr item numel detach as_strided select unbind movedim swapaxes clone copy type
type_as requires_grad_ tolist numpy element_size nelement is_contiguous storage_offset
""".split())

INPLACE_SUFFIX = "_"

LOWER_PRECISION = frozenset("half bfloat16 float16 float8_e4m3fn float8_e5m2 float8_e4m3fnuz".split())

# precision ranks: fp64 > fp32 > tf32 > bf16/fp16 > fp8 (names as torch, Triton and C++ spell them)
RANK_NAMES = {5: "fp64", 4: "fp32", 3: "tf32", 2: "bf16/fp16", 1: "fp8"}


def precision_rank(name: str) -> int | None:
    """The rank of a dtype's name (`torch.bfloat16`, `tl.float8e4nv`, `__half`, `at::kBFloat16`),
    or None where it names no floating dtype."""
    n = name.rsplit(".", 1)[-1].rsplit("::", 1)[-1].lower().lstrip("_")
    if "fp8" in n or "float8" in n or "e4m3" in n or "e5m2" in n:
        return 1
    if n in ("half", "half2", "float16", "bfloat16", "bfloat162", "nv_bfloat16", "nv_bfloat162", "khalf",
             "kbfloat16", "kfloat16") or n.startswith(("float2half", "half2float", "float2bfloat16",
                                                          "bfloat162float", "hmul", "hadd", "hfma")):
        return 2
    if n in ("float32", "float", "kfloat", "kfloat32"):
        return 4
    if n in ("float64", "double", "kdouble", "kfloat64"):
        return 5
    return None

TENSOR_METHOD_COMPUTE = (HEAVY | COMPUTE) - frozenset(
    "Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d".split())

# nn module classes by constructor name: calling an instance is compute of that kind
NN_HEAVY_MODULES = frozenset(n for n in HEAVY if n[:1].isupper())
NN_COMPUTE_MODULES = frozenset(n for n in COMPUTE if n[:1].isupper())

# identity-valued at init: a module that is the identity (or close to it) on typical test data
NEAR_IDENTITY = frozenset("""dropout Dropout dropout2d Dropout2d Dropout3d alpha_dropout layer_norm
LayerNorm batch_norm BatchNorm1d BatchNorm2d BatchNorm3d group_norm GroupNorm instance_norm
InstanceNorm1d InstanceNorm2d InstanceNorm3d rms_norm RMSNorm""".split())

# evidence that an op family is computed somewhere in custom code (CUDA, Triton or Python)
OP_EVIDENCE: dict[str, tuple[str, ...]] = {
    "softmax": ("exp", "softmax"),
    "log_softmax": ("exp", "log", "softmax"),
    "layer_norm": ("rsqrt", "sqrt", "norm", "var", "mean"),
    "group_norm": ("rsqrt", "sqrt", "norm", "var", "mean"),
    "batch_norm": ("rsqrt", "sqrt", "norm", "var", "mean"),
    "instance_norm": ("rsqrt", "sqrt", "norm", "var", "mean"),
    "rms_norm": ("rsqrt", "sqrt", "norm"),
    "gelu": ("erf", "tanh", "gelu"),
    "sigmoid": ("exp", "sigmoid"),
    "tanh": ("tanh", "exp"),
    "logsumexp": ("exp", "log"),
    "mish": ("tanh", "softplus", "exp", "log"),
    "softplus": ("exp", "log"),
    "elu": ("exp", "expm1"),
    "selu": ("exp", "expm1"),
    # a clamp is near identity on inputs inside its bounds: a stage a candidate drops unseen
    "clamp": ("clamp", "clip", "min", "max", "where", "hardtanh", "saturate"),
    "hardtanh": ("clamp", "clip", "min", "max", "where", "hardtanh", "saturate"),
}


def short(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


def is_torch_name(qualname: str | None) -> bool:
    return bool(qualname) and (qualname == "torch" or qualname.startswith("torch."))


def canonical_op(qualname: str) -> str:
    """torch.ops.aten.mm.default -> mm; torch.nn.functional.relu -> relu; Tensor.relu_ -> relu."""
    parts = qualname.split(".")
    if len(parts) >= 4 and parts[1] == "ops" and parts[2] == "aten":
        return parts[3]
    name = parts[-1]
    if name.endswith(INPLACE_SUFFIX) and not name.startswith("_") and name[:-1] in (HEAVY | COMPUTE):
        return name[:-1]
    return name


def classify(qualname: str) -> str:
    """torch-heavy | torch-compute | torch-create | torch-glue | torch-other."""
    op = canonical_op(qualname)
    if op in HEAVY:
        return "torch-heavy"
    if op in COMPUTE:
        return "torch-compute"
    if op in CREATE:
        return "torch-create"
    if op in GLUE:
        return "torch-glue"
    return "torch-other"
