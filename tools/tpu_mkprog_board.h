/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-mkprog's board kinds (tools/tpu_mkprog_board.c), called from tpu-mkprog's main. */
#ifndef TPU_MKPROG_BOARD_H
#define TPU_MKPROG_BOARD_H

/* 1 if KIND is a board kind (allreduce, bcast, sendrecv, barrier, dptrain, collall). */
int tpu_mkprog_is_board_kind(const char *kind);

/* Parses argv from the start (the board kinds' options) and writes the board job; returns
   the exit status (exits 1 with a one-line message on bad input). */
int tpu_mkprog_board_main(int argc, char **argv);

#endif
