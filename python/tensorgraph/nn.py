"""Keras-like models on TensorGraph (the C++ tg::nn, docs/model.md).

    import tensorgraph as tg
    from tensorgraph import nn

    x = nn.Input((28, 28, 1))
    h = nn.Conv2D(32, 3, activation="relu")(x)
    y = nn.Dense(10)(nn.Flatten()(nn.MaxPool2D(2)(h)))
    model = nn.Model(x, y)
    model.compile(nn.Optimizer.adam(1e-3), "sparse_categorical_crossentropy")
    history = model.fit(x_train, y_train, epochs=3, batch_size=64)   # draws the progress bar

``nn.zoo`` builds mlp, lenet5, mnist_cnn and resnet18/34/50; ``nn.data`` reads MNIST and CIFAR-10.
"""

from ._tensorgraph.nn import *  # noqa: F401,F403
from ._tensorgraph.nn import data, zoo  # noqa: F401
