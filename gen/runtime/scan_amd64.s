//go:build !purego

#include "textflag.h"

// func plainUntilVector(b []byte, i int) int
//
// Sixteen bytes at a time: a byte needs attention when it is below 0x20
// as a signed byte (which takes in every byte from 0x80, negative as
// signed), or equals '"' or '\\'.
TEXT ·plainUntilVector(SB), NOSPLIT, $0-40
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	MOVQ i+24(FP), AX
	MOVQ $0x2020202020202020, BX
	MOVQ BX, X1
	PUNPCKLQDQ X1, X1
	MOVQ $0x2222222222222222, BX
	MOVQ BX, X2
	PUNPCKLQDQ X2, X2
	MOVQ $0x5c5c5c5c5c5c5c5c, BX
	MOVQ BX, X3
	PUNPCKLQDQ X3, X3

loop:
	LEAQ 16(AX), CX
	CMPQ CX, DX
	JGT  done
	MOVOU (SI)(AX*1), X0
	MOVO X1, X4
	PCMPGTB X0, X4
	MOVO X0, X5
	PCMPEQB X2, X5
	MOVO X0, X6
	PCMPEQB X3, X6
	POR  X5, X4
	POR  X6, X4
	PMOVMSKB X4, CX
	TESTL CX, CX
	JNZ  found
	ADDQ $16, AX
	JMP  loop

found:
	BSFL CX, CX
	ADDQ CX, AX

done:
	MOVQ AX, ret+32(FP)
	RET
