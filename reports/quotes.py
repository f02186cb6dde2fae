"""Each claim as the paper wrote it: the source text quoted exactly, in its own language, with an English rendering.

The quotes come from the paper summaries this project was seeded with (a Chinese technical summary of each paper,
and the DLR paper's own English abstract); the ledger shows each beside the project's short form of the claim
(`linrnn.reports.ledger.CLAIMS`), and ledger.json carries it as the claim's `quote`. A quote is copied as the
source has it, flaws included (the abstract's "$ extit{few}$" lost the backslash-t of LaTeX's \\textit).
"""

from __future__ import annotations

QUOTES: dict[str, dict[str, str]] = {
    "R1": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "RotRNN 通过反对称矩阵的矩阵指数来学习一个通用的权重矩阵 $M$，并将其映"
            "射到特殊正交群 $SO(N)$（即$A = \\exp(M - M^\\top)$）"
            "。这确保了$A$ 在整个训练过程中始终是一个有效的旋转矩阵。"
        ),
        "english": (
            "RotRNN learns a general weight matrix M through the matrix exponential of a skew-symmetric"
            " matrix, mapping it onto the special orthogonal group SO(N) (that is, A = exp(M - M^T)). "
            "This ensures that A remains a valid rotation matrix throughout training."
        ),
    },
    "R2": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "作者将旋转矩阵 $A$ 分解为块对角形式：$A = P \\Theta P^\\to"
            "p$。其中 $P$ 是一个正交矩阵，$\\Theta$ 由定义为角度 $\\thet"
            "a_i$ 的 $2\\times2$ 旋转块组成。这种结构允许在不进行昂贵的稠密矩"
            "阵运算的情况下，快速计算 $A^k$。"
        ),
        "english": (
            "The authors decompose the rotation matrix A into block-diagonal form, A = P Theta P^T, "
            "where P is an orthogonal matrix and Theta consists of 2x2 rotation blocks by angles "
            "theta_i. This structure allows A^k to be computed quickly without expensive dense matrix "
            "operations."
        ),
    },
    "R3": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "与 LRU 基于无限序列极限进行归一化不同，RotRNN 的归一化对所有时间步都"
            "成立，从而防止了当归一化常数被提升至 $t$ 次方时常见的早期输入指数级衰减现象"
            "。"
        ),
        "english": (
            "Unlike the LRU, whose normalisation rests on the limit of an infinite sequence, RotRNN's "
            "normalisation holds at every time step, which prevents the exponential decay of early "
            "inputs that is common when the normalising constant is raised to the power t."
        ),
    },
    "R4": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "RotRNN 采用了 $H$ 个独立的低维头。每个头都拥有各自的旋转矩阵 $A^"
            "{(h)}$、输入矩阵 $B^{(h)}$ 和衰减因子 $\\gamma^{(h)"
            "}$。输出经过拼接并进行线性混合"
        ),
        "english": (
            "RotRNN uses H independent low-dimensional heads. Each head has its own rotation matrix "
            "A^(h), input matrix B^(h) and decay factor gamma^(h). The outputs are concatenated and "
            "mixed linearly"
        ),
    },
    "R5": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "推导出了 LRU 的一个特例（其特征值形成共轭对）与多头 RotRNN 之间的数"
            "学等价性"
        ),
        "english": (
            "derives a mathematical equivalence between a special case of the LRU (whose eigenvalues "
            "form conjugate pairs) and a multi-head RotRNN"
        ),
    },
    "R6": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "RotRNN 在与最先进的线性递归模型（S4, S5, LRU）的对比中表现出了"
            "竞争力。在离散输入任务（如 ListOps, Text (IMDB) 和 Ret"
            "rieval）中，它取得了基准模型中的最高分。然而，在像素级图像任务（Path-"
            "X, CIFAR）上，它的表现略低于某些基准模型。"
        ),
        "english": (
            "RotRNN is competitive with the state-of-the-art linear recurrent models (S4, S5, LRU). On "
            "the discrete-input tasks (ListOps, Text (IMDB) and Retrieval) it achieves the highest "
            "score among the baselines. On the pixel-level image tasks (Path-X, CIFAR), however, it is "
            "slightly below some baselines."
        ),
    },
    "R7": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "在 35 类语音命令分类任务中，RotRNN 以相似的参数量实现了与复现的 LR"
            "U 相同的性能（95.2% 准确率）"
        ),
        "english": (
            "On the 35-class Speech Commands task, RotRNN achieves the same performance as the "
            "reproduced LRU (95.2 % accuracy) at a similar parameter count"
        ),
    },
    "R8": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "通过对 ListOps 数据集上隐藏状态范数的经验分析显示，RotRNN 在训练"
            "、层深度和随机种子方面都能保持几乎恒定的量级。相比之下，LRU 的隐藏状态范数表"
            "现出剧烈波动，且需要更长时间才能收敛到稳定量级。"
        ),
        "english": (
            "An empirical analysis of hidden-state norms on ListOps shows that RotRNN keeps an almost "
            "constant magnitude across training, layer depth and random seeds. The LRU's hidden-state "
            "norm, by contrast, fluctuates strongly and takes longer to settle to a stable magnitude."
        ),
    },
    "R9": {
        "source": "the RotRNN paper's summary (Biegun et al. 2024)",
        "text": (
            "它无法强制实矩阵的特征值成共轭对，缺乏确保实值输出的约束，并且依赖于一个学习到的"
            "归一化因子，该因子无法保证训练过程中隐藏状态量级的连贯性。"
        ),
        "english": (
            "It cannot force the eigenvalues of a real matrix into conjugate pairs, lacks a constraint "
            "ensuring real-valued outputs, and relies on a learned normalisation factor that cannot "
            "guarantee a coherent hidden-state magnitude during training."
        ),
    },
    "D1": {
        "source": "the DLR paper's summary (Gupta et al. 2022)",
        "text": (
            "在 Long Range Arena 的所有任务上，包括 Path-X 和 Li"
            "stOps，DLR 的性能与 S4 和 S4D 相当或更优，且公式更简洁、更可解"
            "释。"
        ),
        "english": (
            "On every task of the Long Range Arena, Path-X and ListOps included, DLR performs "
            "comparably to or better than S4 and S4D, with a simpler, more interpretable formulation."
        ),
    },
    "D2": {
        "source": "the DLR paper's summary (Gupta et al. 2022)",
        "text": (
            "使用复数域的转移矩阵，并将特征值初始化在单位圆附近，以实现百万步以上的长距离信号"
            "传播。"
        ),
        "english": (
            "Uses a complex transition matrix with its eigenvalues initialised near the unit circle, to"
            " propagate a signal over a million steps and more."
        ),
    },
    "D3": {
        "source": "the DLR paper's summary (Gupta et al. 2022)",
        "text": (
            "引入一种周期性初始化方案，使大小为 N 的 DLR 能够表达任意长度为 N 的卷"
            "积核。"
        ),
        "english": (
            "Introduces a periodic initialisation with which a DLR of size N can express any "
            "convolution kernel of length N."
        ),
    },
    "D4": {
        "source": "the DLR paper's abstract (Gupta et al. 2022)",
        "text": (
            "We find that while SSMs report near-perfect performance on tasks that can be modeled via $"
            " extit{few}$ convolutional kernels, they struggle on tasks requiring $ extit{many}$ such "
            "kernels and especially when the desired sequence manipulation is $ "
            "extit{context-dependent}$."
        ),
        "english": (
            "(The paper's own English; the summary's copy lost the backslash-t of \\textit.) SSMs are "
            "near-perfect on tasks that few convolution kernels can model, and struggle on tasks that "
            "need many, especially when the manipulation is context-dependent."
        ),
    },
    "D5": {
        "source": "the DLR paper's summary (Gupta et al. 2022)",
        "text": (
            "在 ListOps-SubTrees 和 PathfinderSegmentat"
            "ion-256 任务上，DLR 胜过 LocalAttention，尤其在长序列"
            "长度下优势更明显，且吞吐量更高。"
        ),
        "english": (
            "On ListOps-SubTrees and PathfinderSegmentation-256, DLR beats LocalAttention, the more "
            "clearly at long sequence lengths, and with higher throughput."
        ),
    },
    "D6": {
        "source": "the DLR paper's summary (Gupta et al. 2022)",
        "text": (
            "在 10 类语音命令数据集上，DLR 与 S4 和 S4D 表现相当或更优，以 "
            "O(L) 的解码复杂度实现了 97.1% 的准确率。"
        ),
        "english": (
            "On the 10-class Speech Commands data set, DLR performs comparably to or better than S4 and"
            " S4D, reaching 97.1 % accuracy with O(L) decoding complexity."
        ),
    },
    "D7": {
        "source": "the DLR paper's summary (Gupta et al. 2022)",
        "text": (
            "在 PG-19 的因果语言建模任务中，DLR 的测试交叉熵损失与 Transfo"
            "rmer 相当（2.44–2.88），参数量为 1.2B，吞吐量为 1.0×。"
        ),
        "english": (
            "On causal language modelling of PG-19, DLR's test cross-entropy is comparable to a "
            "Transformer's (2.44-2.88), at 1.2B parameters and 1.0x throughput."
        ),
    },
    "D8": {
        "source": "the DLR paper's summary (Gupta et al. 2022)",
        "text": (
            "与已知对层归一化位置高度敏感的 Transformer 相比，DLR 对层归一化"
            "位置的鲁棒性更强。"
        ),
        "english": (
            "Compared with Transformers, which are known to be highly sensitive to the position of "
            "layer normalisation, DLR is more robust to the position of layer normalisation."
        ),
    },
    "D9": {
        "source": "the DLR paper's summary (Gupta et al. 2022)",
        "text": (
            "尽管结构简单，DLR 在长序列任务（包括 Long Range Arena 和原"
            "始语音分类）上的性能仍与先前的 SSM 和注意力模型相当或更优，同时保持 O(L"
            ") 的推理复杂度。"
        ),
        "english": (
            "Despite its simple structure, DLR performs comparably to or better than earlier SSMs and "
            "attention models on long-sequence tasks (Long Range Arena and raw speech classification "
            "included), while keeping O(L) inference complexity."
        ),
    },
}
